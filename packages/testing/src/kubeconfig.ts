/** Options for the kubeconfig the embedded apiserver writes. */
export interface KubeconfigOptions {
  /** Cluster, user and context name. Default `reconcile-loop`. */
  name?: string | undefined;
  /** The context's default namespace. Default `default`. */
  namespace?: string | undefined;
  /** Bearer token written for the user. Default: the server's required token, else `reconcile-loop`. */
  token?: string | undefined;
}

function q(s: string): string {
  return JSON.stringify(s);
}

/**
 * A kubeconfig (YAML) pointing one context at `server` with a bearer token. The cluster carries
 * `insecure-skip-tls-verify: true` because @kubernetes/client-node 1.x refuses plain `http:` otherwise.
 */
export function renderKubeconfig(server: string, o: { name: string; namespace: string; token: string }): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${q(o.name)}`,
    '  cluster:',
    `    server: ${q(server)}`,
    // @kubernetes/client-node 1.x refuses an http: server unless this is set (it has no TLS to skip).
    '    insecure-skip-tls-verify: true',
    'contexts:',
    `- name: ${q(o.name)}`,
    '  context:',
    `    cluster: ${q(o.name)}`,
    `    user: ${q(o.name)}`,
    `    namespace: ${q(o.namespace)}`,
    `current-context: ${q(o.name)}`,
    'users:',
    `- name: ${q(o.name)}`,
    '  user:',
    `    token: ${q(o.token)}`,
    'preferences: {}',
    '',
  ].join('\n');
}
