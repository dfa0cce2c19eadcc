/** The probe handler over real HTTP on loopback. */
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@reconcile-loop/primitives';
import {
  ControlledSource,
  FakeLeaderGate,
  httpGet,
  serveOnLoopback,
  settle,
  type LoopbackServer,
} from '@reconcile-loop/test-support';
import { ReconcileLoop, healthHandler, replaceEvent, type HealthReporter } from '../src/index.js';

interface Cell {
  pool: string;
}

const servers: LoopbackServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
});

async function serve(reporter: HealthReporter, options?: Parameters<typeof healthHandler>[1]): Promise<string> {
  const server = await serveOnLoopback(healthHandler(reporter, options));
  servers.push(server);
  return server.url;
}

const get = httpGet;

describe('healthHandler', () => {
  it("[loop: probes] ?verbose shows a passing check's detail: [+]leader ok: leading / standby; a plain probe answers ok", async () => {
    const gate = new FakeLeaderGate();
    const source = new ControlledSource<Cell>();
    const loop = new ReconcileLoop<Cell, string>({
      source,
      keyMap: (c) => c.pool,
      reconcile: () => {},
      leadership: { gate },
      clock: new ManualClock(),
    });
    const base = await serve(loop);
    const starting = loop.start();
    await settle();
    source.last.push(replaceEvent([]));
    await starting;
    let res = await get(`${base}/readyz?verbose`);
    expect(res.status).toBe(200);
    expect(res.body).toContain('[+]leader ok: standby: caches warm, waiting for leadership\n');
    gate.grant();
    await settle();
    res = await get(`${base}/readyz?verbose`);
    expect(res.body).toContain('[+]leader ok: leading\n');
    expect(res.body).toContain('[+]reconcile ok\n'); // no detail, no colon
    expect((await get(`${base}/readyz`)).body).toBe('ok');
    await loop.stop();
  });

  it('[loop: probes] /readyz is 500 until the source syncs, then 200 ok; /healthz is 200 ok; failures list [+]/[-] lines with reasons withheld', async () => {
    const source = new ControlledSource<Cell>();
    const loop = new ReconcileLoop<Cell, string>({
      source,
      keyMap: (c) => c.pool,
      reconcile: () => {},
      clock: new ManualClock(),
    });
    const base = await serve(loop);
    const starting = loop.start();
    await settle();

    let res = await get(`${base}/readyz`);
    expect(res.status).toBe(500);
    expect(res.body).toBe(
      '[-]started failed: reason withheld\n[-]source:controlled failed: reason withheld\n[+]reconcile ok\nreadyz check failed\n',
    );
    res = await get(`${base}/readyz?verbose`);
    expect(res.body).toContain('[-]source:controlled failed: not synced yet\n');
    expect(res.body).toContain('[-]started failed: loop is starting\n');
    res = await get(`${base}/healthz`);
    expect(res).toMatchObject({ status: 200, body: 'ok', type: 'text/plain; charset=utf-8' });

    source.last.push(replaceEvent([]));
    await starting;
    res = await get(`${base}/readyz`);
    expect(res).toMatchObject({ status: 200, body: 'ok' });
    res = await get(`${base}/readyz?verbose`);
    expect(res.body).toBe('[+]started ok\n[+]source:controlled ok\n[+]reconcile ok\nreadyz check passed\n');
    res = await get(`${base}/livez?verbose`);
    expect(res.body).toBe('[+]loop ok\n[+]source:controlled ok\n[+]worker ok\nlivez check passed\n');

    await loop.stop();
    expect((await get(`${base}/readyz`)).status).toBe(500);
  });

  it('[loop: probes] a single check by path, ?exclude, JSON, 404, 405, and a throwing health()', async () => {
    const checks = [
      { name: 'started', ok: true },
      { name: 'source:pods', ok: false, reason: 'failed permanently: 400 BadRequest: unable to parse requirement' },
    ];
    let broken = false;
    const reporter: HealthReporter = {
      health: () => {
        if (broken) throw new Error('report broke');
        return { ready: { ok: false, checks }, alive: { ok: true, checks: [{ name: 'loop', ok: true }] } };
      },
    };
    const base = await serve(reporter);
    expect(await get(`${base}/readyz/started`)).toMatchObject({ status: 200, body: 'ok' });
    expect(await get(`${base}/readyz/source:pods`)).toMatchObject({ status: 500 });
    expect(await get(`${base}/readyz/nope`)).toMatchObject({ status: 404 });
    checks.push({ name: 'source:pods(ml, pool)', ok: true });
    expect(await get(`${base}/readyz/source:pods(ml,%20pool)`)).toMatchObject({ status: 200, body: 'ok' });
    checks.pop();
    const excluded = await get(`${base}/readyz?exclude=source:pods`);
    expect(excluded).toMatchObject({ status: 200, body: 'ok' });
    const json = await get(`${base}/readyz?format=json`);
    expect(json.status).toBe(500);
    expect(json.type).toBe('application/json');
    expect(JSON.parse(json.body)).toEqual({ status: 'failed', checks });
    expect(JSON.parse((await get(`${base}/healthz`, { accept: 'application/json' })).body)).toEqual({
      status: 'ok',
      checks: [{ name: 'loop', ok: true }],
    });
    expect((await get(`${base}/metrics`)).status).toBe(404);
    expect((await get(`${base}/readyz`, { method: 'POST' })).status).toBe(405);
    expect((await get(`${base}/readyz`, { method: 'HEAD' })).status).toBe(500);
    broken = true;
    expect(await get(`${base}/healthz`)).toMatchObject({ status: 500, body: 'health() failed: report broke\n' });
  });

  it('[loop: probes] revealReasons shows the reasons without ?verbose', async () => {
    const reporter: HealthReporter = {
      health: () => ({
        ready: { ok: false, checks: [{ name: 'reconcile', ok: false, reason: 'reconcile of engines running for 700 s' }] },
        alive: { ok: true, checks: [] },
      }),
    };
    const base = await serve(reporter, { revealReasons: true });
    expect((await get(`${base}/readyz`)).body).toBe(
      '[-]reconcile failed: reconcile of engines running for 700 s\nreadyz check failed\n',
    );
  });
});
