/**
 * A `KubeClient` whose requests pass a tap first: how the story, the tests and the kill -9 hook reach
 * into the controller from OUTSIDE — a pause right after a pod create was answered, another writer
 * racing a status write — while the controller itself carries no hook, seam or test option: it is
 * handed this client as it would be handed any other.
 */
import { httpTransport, KubeClient, type KubeClientOptions, type KubeConfigAuth } from '@reconcile-loop/kube-client';

/** Points on the wire between the controller and the apiserver. Each is awaited: a tap that never resolves pauses the caller. */
export interface Taps {
  /** A pod create (POST …/pods) was answered 201; `count` numbers this client's creates. Before the caller sees the answer. */
  afterPodCreate?(pod: string, count: number): void | Promise<void>;
  /** A pod delete (DELETE …/pods/NAME) is about to be sent: after the cache read it was decided from. */
  beforePodDelete?(pod: string): void | Promise<void>;
  /** A CellSet status write (PUT …/cellsets/NAME/status) is about to be sent: after the read it was computed from. */
  beforeStatusWrite?(cellSet: string): void | Promise<void>;
  /** That write was answered with `code` (409: someone wrote in between; the controller re-reads and retries). */
  afterStatusWrite?(cellSet: string, code: number): void | Promise<void>;
  /** Any request was answered `status`; `sentAt` is when it was sent (`Date.now()`). Not awaited. */
  afterResponse?(method: string, url: URL, status: number, sentAt: number): void;
}

const POD_CREATE = /^\/api\/v1\/namespaces\/[^/]+\/pods$/;
const POD_DELETE = /^\/api\/v1\/namespaces\/[^/]+\/pods\/([^/]+)$/;
const STATUS_WRITE = /\/cellsets\/([^/]+)\/status$/;

/** A client over `kubeConfig` whose requests pass `taps` (the same transport a plain client uses, wrapped). */
export function tappedClient(
  kubeConfig: KubeConfigAuth,
  taps: Taps,
  options: Omit<KubeClientOptions, 'kubeConfig' | 'transport'> = {},
): KubeClient {
  const send = httpTransport(kubeConfig);
  let creates = 0;
  return new KubeClient({
    kubeConfig,
    ...options,
    transport: async (request) => {
      const path = request.url.pathname;
      const status = request.method === 'PUT' ? STATUS_WRITE.exec(path)?.[1] : undefined;
      if (status !== undefined) await taps.beforeStatusWrite?.(status);
      const deleted = request.method === 'DELETE' ? POD_DELETE.exec(path)?.[1] : undefined;
      if (deleted !== undefined) await taps.beforePodDelete?.(deleted);
      const sentAt = Date.now();
      const response = await send(request);
      taps.afterResponse?.(request.method, request.url, response.status, sentAt);
      if (status !== undefined) await taps.afterStatusWrite?.(status, response.status);
      if (request.method === 'POST' && POD_CREATE.test(path) && response.status === 201) {
        const pod = (JSON.parse(request.body ?? '{}') as { metadata?: { name?: string } }).metadata?.name ?? '';
        await taps.afterPodCreate?.(pod, ++creates);
      }
      return response;
    },
  });
}
