export * from './client.js';
export * from './errors.js';
export * from './kube-api.js';
export * from './reflector.js';
export * from './pods.js';
