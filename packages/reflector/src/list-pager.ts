import type { KubernetesObjectView } from '@reconcile-loop/k8s-types';
import { listContinueToken, parseListPage, type ListPage } from '@reconcile-loop/k8s-types/internal';
import type { ListPageResult, ListRequest } from './client.js';
import type { ReflectorCore } from './core.js';

/** One page, however the client answered it: read from its bytes, or the raw items of the exact path. */
export type Page<T> = ListPageResult<ListPage<T>>;

/** The request for the next page, sent ahead: the token it asked with, its own controller, its answer. */
interface Ahead<T> {
  readonly token: string;
  readonly controller: AbortController;
  readonly page: Promise<Page<T>>;
}

/**
 * Fetches the pages of one LIST. With a client that has `listPage`, each page's successor is
 * requested as soon as its body's bytes have arrived: its `continue` token is read from the body's
 * first bytes (k8s-types' `listContinueToken`) before the page is read, so the server builds page
 * N+1 while we read page N (client-go's pager asks only once page N is read).
 *
 * Invariant: at most one page is requested ahead, and only with the token the page being read
 * carries. It is only a head start: {@link page} hands it over only when asked for that very token
 * (the LIST loop asks with the token of the page as read), and otherwise aborts it and sends the
 * request as if there were no pager. Memory: the request ahead is sent while the page is read, so
 * `KubeApiClient` reads its body into the same buffer once this one is done (kube-client's
 * `readListBytes`): one page buffer per LIST. The request ahead is sent with its own controller's signal and
 * the LIST's together (`AbortSignal.any`): the LIST's abort, its timeout and its end (the loop
 * aborts its controller when it returns or fails) abort it; its rejection is observed here, so a
 * request nobody takes is never unhandled.
 */
export class ListPager<T extends KubernetesObjectView> {
  readonly #core: ReflectorCore<T>;
  /** The LIST's signal: every request is sent with it, or with a controller linked to it. */
  readonly #signal: AbortSignal;
  #ahead: Ahead<T> | undefined;

  constructor(core: ReflectorCore<T>, signal: AbortSignal) {
    this.#core = core;
    this.#signal = signal;
  }

  /**
   * The page `limit` / `token` asks for (no `limit`: one unpaged LIST): the request sent ahead when
   * it asked with `token`, else a new request (and a request ahead with another token is aborted).
   * May throw synchronously (a client that cannot build a request), as the client does.
   */
  page(limit: number | undefined, token: string | undefined): Promise<Page<T>> {
    const ahead = this.#ahead;
    this.#ahead = undefined;
    if (ahead !== undefined) {
      if (ahead.token === token) return ahead.page;
      ahead.controller.abort();
    }
    return this.#request(limit, token, this.#signal);
  }

  /**
   * One request: through `listPage` when the client has it, each page's bytes read by the view's
   * byte reader (`parseListPage`; a page it cannot prove is read the exact way from the same bytes
   * by the client), else `list`. A paged request's body, once it has arrived, sends its successor ahead.
   */
  #request(limit: number | undefined, token: string | undefined, signal: AbortSignal): Promise<Page<T>> {
    const core = this.#core;
    const request: ListRequest = { ...core.scope, signal, limit, continue: token };
    if (core.client.listPage === undefined) return core.client.list(request).then((list) => ({ kind: 'exact', list }));
    return core.client.listPage(request, (body) => {
      if (limit !== undefined) this.#sendAhead(limit, listContinueToken(body), signal);
      return parseListPage(body, core.schema);
    });
  }

  /** Requests the page after the one whose body just arrived (sent with `signal`), unless a request is already ahead. */
  #sendAhead(limit: number, token: string | undefined, signal: AbortSignal): void {
    // An empty token is the last page; an aborted request's body is nobody's page.
    if (token === undefined || token === '' || this.#ahead !== undefined || signal.aborted || this.#signal.aborted) return;
    const controller = new AbortController();
    let page: Promise<Page<T>>;
    try {
      page = this.#request(limit, token, AbortSignal.any([this.#signal, controller.signal]));
    } catch (error) {
      // Thrown here it would fail the page being read: the loop meets it when it takes this request.
      page = Promise.reject(error);
    }
    page.catch(() => {});
    this.#ahead = { token, controller, page };
  }
}
