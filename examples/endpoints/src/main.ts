// The endpoints controller as a process: one manager (one client, shared watches, a Lease, probes
// and /metrics on one port, SIGTERM with a bounded shutdown), one controller. Run it in-cluster or
// with a kubeconfig: WATCH_NAMESPACE (default all), POD_NAMESPACE (the Lease's), PROBES_PORT (8081).
import { KubeConfig } from '@kubernetes/client-node';
import { describeError } from '@reconcile-loop/loop';
import { Manager } from '@reconcile-loop/manager';
import { controllerMetrics, metricsHandler } from '@reconcile-loop/metrics';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { endpointsController } from './controller.js';

const kubeConfig = new KubeConfig();
kubeConfig.loadFromDefault();
const registry = new Registry();
collectDefaultMetrics({ register: registry });
const manager = new Manager({
  kubeConfig,
  leaderElection: { namespace: process.env['POD_NAMESPACE'] ?? 'default', name: 'endpoints-example' },
  probes: { port: Number(process.env['PROBES_PORT'] ?? 8081) },
  metrics: metricsHandler(registry),
});
endpointsController(manager, { namespace: process.env['WATCH_NAMESPACE'], observer: controllerMetrics({ registry }) });
const { code, error } = await manager.run(); // until SIGTERM/SIGINT: 0 after a clean stop, 1 otherwise
if (error !== undefined) console.error(`endpoints: ${describeError(error)}`);
process.exitCode = code;
