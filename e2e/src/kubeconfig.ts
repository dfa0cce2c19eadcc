import { X509Certificate } from 'node:crypto';

/** What a client needs to reach one apiserver. */
export interface ClusterAccess {
  readonly server: string;
  /** PEM of the CA that signed the serving certificate; absent means skip TLS verification. */
  readonly caPem?: string;
  readonly token: string;
}

/** A kubeconfig (YAML, one cluster, one context, one token user) for `access`. */
export function renderKubeconfig(name: string, access: ClusterAccess): string {
  const tls =
    access.caPem !== undefined
      ? `    certificate-authority-data: ${Buffer.from(access.caPem).toString('base64')}`
      : '    insecure-skip-tls-verify: true';
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${name}`,
    '  cluster:',
    `    server: ${access.server}`,
    tls,
    'users:',
    '- name: e2e-admin',
    '  user:',
    `    token: ${access.token}`,
    'contexts:',
    `- name: ${name}`,
    '  context:',
    `    cluster: ${name}`,
    '    user: e2e-admin',
    `current-context: ${name}`,
    '',
  ].join('\n');
}

/** Splits a PEM bundle into its certificates. */
export function splitPem(bundle: string): string[] {
  return bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)?.map((pem) => `${pem}\n`) ?? [];
}

/**
 * The CA certificate of a bundle the apiserver wrote for itself (serving certificate followed
 * by the self-signed CA that signed it), checked to cover `ip`.
 */
export function caFromServingBundle(bundle: string, ip: string): string {
  const certs = splitPem(bundle).map((pem) => ({ pem, x509: new X509Certificate(pem) }));
  const leaf = certs.find((c) => !c.x509.ca);
  const ca = certs.find((c) => c.x509.ca);
  if (leaf === undefined || ca === undefined) throw new Error('serving certificate bundle has no leaf/CA pair');
  if (leaf.x509.checkIP(ip) === undefined)
    throw new Error(`serving certificate does not cover ${ip}: ${leaf.x509.subjectAltName ?? ''}`);
  if (!leaf.x509.verify(ca.x509.publicKey)) throw new Error('serving certificate is not signed by the bundled CA');
  return ca.pem;
}
