export { ControlledSource, ControlledStream } from './controlled-source.js';
export { recordingLogger, type LogEntry } from './recording-logger.js';
export { settle } from './settle.js';
export { scaledClock, within } from './real-time.js';
export { httpGet, serveOnLoopback, type HttpGetResult, type LoopbackServer } from './http-get.js';
export { FakeLeaderGate } from './fake-leader-gate.js';
export { healthySource } from './source-health.js';
export {
  FakeLeaseServer,
  ReplicaClock,
  type LeaseFault,
  type LeaseRequest,
  type LeaseResponse,
  type LeaseTransportOptions,
} from './fake-lease-server.js';
export { KUBECTL_MISSING, kubectlBinary } from './kubectl.js';
