/**
 * A `node:http` request handler for a Deployment's probes, with controller-runtime's healthz
 * format: `/healthz` (liveness) and `/readyz` (readiness) answer 200 `ok`, or 500 with one
 * `[+]name ok` / `[-]name failed: …` line per check and `<endpoint> check failed`. `?verbose` lists
 * every check (with the failure reasons, and a passing check's detail: `[+]leader ok: leading`); `?exclude=name` skips a check; `/readyz/<check>` asks one
 * check; `?format=json` (or `Accept: application/json`) answers `{ "status", "checks" }`.
 * No dependency and no `node:http` import: it only needs the request's `url`/`method`/`headers`
 * and the response's `statusCode`/`setHeader`/`end`, so `http.createServer(healthHandler(loop))` works.
 */
import type { HealthVerdict } from './health.js';

/** Anything with the loop's `health()` verdicts (a `ReconcileLoop`, or your own aggregate). */
export interface HealthReporter {
  health(): { readonly ready: HealthVerdict; readonly alive: HealthVerdict };
}

/** Options for {@link healthHandler}. */
export interface HealthHandlerOptions {
  /**
   * Show failure reasons in non-verbose failure bodies too. Default false: like controller-runtime,
   * a plain probe answer says `reason withheld` (the endpoint may be reachable by anyone), and
   * `?verbose` shows the reasons (source errors' Status lines, never credentials or object contents).
   */
  revealReasons?: boolean | undefined;
}

/** The parts of `http.IncomingMessage` used. */
interface RequestLike {
  readonly url?: string | undefined;
  readonly method?: string | undefined;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** The parts of `http.ServerResponse` used. */
interface ResponseLike {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(body?: string): unknown;
}

const ENDPOINTS = { '/healthz': 'alive', '/livez': 'alive', '/readyz': 'ready' } as const;

/**
 * Builds the handler. Every request takes a fresh `health()` snapshot; a `health()` that throws
 * answers 500 with the error's message rather than crashing the server.
 */
export function healthHandler(
  reporter: HealthReporter,
  options: HealthHandlerOptions = {},
): (req: RequestLike, res: ResponseLike) => void {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://probe.invalid');
    const [, top = '', single] = /^(\/[^/]+)(?:\/(.+))?$/.exec(url.pathname) ?? [];
    const endpoint = ENDPOINTS[top as keyof typeof ENDPOINTS];
    if (endpoint === undefined) return send(res, 404, 'text/plain; charset=utf-8', `not found: ${url.pathname}\n`);
    if (req.method !== undefined && req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      return send(res, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
    }
    let verdict: HealthVerdict;
    try {
      verdict = reporter.health()[endpoint];
    } catch (error) {
      return send(
        res,
        500,
        'text/plain; charset=utf-8',
        `health() failed: ${error instanceof Error ? error.message : String(error)}\n`,
      );
    }
    const name = top.slice(1);
    const excluded = new Set(url.searchParams.getAll('exclude'));
    let checks = verdict.checks.filter((c) => !excluded.has(c.name));
    if (single !== undefined) {
      const wanted = safeDecode(single); // source names may hold spaces: /readyz/source:pods(ml,%20pool)
      checks = checks.filter((c) => c.name === wanted);
      if (checks.length === 0) return send(res, 404, 'text/plain; charset=utf-8', `no check named ${wanted}\n`);
    }
    const ok = checks.every((c) => c.ok);
    const status = ok ? 200 : 500;
    const accept = req.headers['accept'];
    if (url.searchParams.get('format') === 'json' || (typeof accept === 'string' && accept.includes('application/json'))) {
      return send(res, status, 'application/json', JSON.stringify({ status: ok ? 'ok' : 'failed', checks }) + '\n');
    }
    const verbose = url.searchParams.has('verbose');
    if (ok && !verbose) return send(res, 200, 'text/plain; charset=utf-8', 'ok');
    const reveal = verbose || options.revealReasons === true;
    // A passing check's detail (the `leader` check's `leading` / `standby: …`) shows where reasons
    // do: `?verbose` is where an operator asks which replica leads.
    const lines = checks.map((c) =>
      c.ok
        ? `[+]${c.name} ok${reveal && c.reason !== undefined ? `: ${c.reason}` : ''}`
        : `[-]${c.name} failed: ${reveal ? (c.reason ?? 'failed') : 'reason withheld'}`,
    );
    for (const skipped of excluded) lines.push(`[+]${skipped} excluded: ok`);
    lines.push(ok ? `${name} check passed` : `${name} check failed`);
    send(res, status, 'text/plain; charset=utf-8', lines.join('\n') + '\n');
  };
}

function send(res: ResponseLike, status: number, type: string, body: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', type);
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.end(body);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
