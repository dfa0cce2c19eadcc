export { ControlledSource, ControlledStream } from './controlled-source.js';
export { recordingLogger, type LogEntry } from './recording-logger.js';
export { settle } from './settle.js';
export { scaledClock, within } from './real-time.js';
export { httpGet, type HttpGetResult } from './http-get.js';
