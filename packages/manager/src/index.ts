/**
 * @reconcile-loop/manager: several ReconcileLoops in one process, as controller-runtime's manager
 * runs controllers — one KubeClient, one shared watch per kind and selector, one leader election,
 * composed probes beside `/metrics`, SIGTERM/SIGINT with one bounded shutdown, and an exit code.
 */
export { Manager, type ManagerExit } from './manager.js';
export type { ManagerOptions, ManagerSourceOptions, MetricsHandler } from './options.js';
// Sharing one stream between loops without a manager (an in-process source, a reflector of your own).
export { shareSource, type SharedSource } from './shared-source.js';
export { ManagerAlreadyStartedError, ShutdownTimeoutError } from './errors.js';
