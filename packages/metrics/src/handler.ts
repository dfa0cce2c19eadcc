/**
 * A `node:http` request handler serving a registry at `/metrics` in the Prometheus text format
 * (the registry's content type), and handing every other path to `next` — e.g. the loop's
 * `healthHandler`, so `/metrics`, `/healthz` and `/readyz` share one port, like controller-runtime's
 * manager. Only the request's `url`/`method` and the response's `statusCode`/`setHeader`/`end` are used.
 */
import { register, type Registry } from 'prom-client';

/** The parts of `http.IncomingMessage` used. */
export interface MetricsRequest {
  readonly url?: string | undefined;
  readonly method?: string | undefined;
}

/** The parts of `http.ServerResponse` used. */
export interface MetricsResponse {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(body?: string): unknown;
}

/** A request handler of the shape `http.createServer` takes. */
export type RequestHandler<Req extends MetricsRequest = MetricsRequest, Res extends MetricsResponse = MetricsResponse> = (
  req: Req,
  res: Res,
) => unknown;

/** Options of {@link metricsHandler}. */
export interface MetricsHandlerOptions<Req extends MetricsRequest, Res extends MetricsResponse> {
  /** The path served. Default `/metrics`. */
  path?: string | undefined;
  /** Handles every other path (e.g. `healthHandler(loop)`). Default: 404. */
  next?: RequestHandler<Req, Res> | undefined;
}

/**
 * `GET`/`HEAD <path>` answers 200 with `registry.metrics()`; another method 405; a failing collect
 * 500 with its message (never a hung request); any other path goes to `next` (404 without one).
 *
 * ```ts
 * http.createServer(metricsHandler(registry, { next: healthHandler(loop) })).listen(8080, '127.0.0.1');
 * ```
 */
export function metricsHandler<Req extends MetricsRequest, Res extends MetricsResponse>(
  registry: Registry = register,
  options: MetricsHandlerOptions<Req, Res> = {},
): RequestHandler<Req, Res> {
  const path = options.path ?? '/metrics';
  const next = options.next;
  return (req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (pathname !== path) {
      if (next !== undefined) return next(req, res);
      return send(res, 404, 'text/plain; charset=utf-8', `not found: ${pathname}\n`);
    }
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return send(res, 405, 'text/plain; charset=utf-8', `method ${method} not allowed\n`);
    }
    return registry.metrics().then(
      (body) => send(res, 200, registry.contentType, method === 'HEAD' ? undefined : body),
      (error: unknown) =>
        send(
          res,
          500,
          'text/plain; charset=utf-8',
          `collecting metrics failed: ${error instanceof Error ? error.message : String(error)}\n`,
        ),
    );
  };
}

function send(res: MetricsResponse, status: number, contentType: string, body: string | undefined): void {
  res.statusCode = status;
  res.setHeader('Content-Type', contentType);
  res.end(body);
}
