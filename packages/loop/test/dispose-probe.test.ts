import { expect, it } from 'vitest';
it('probe', async () => {
  const log: string[] = [];
  {
    await using r = { async [Symbol.asyncDispose]() { log.push('disposed'); } };
    log.push('body');
    void r;
  }
  expect(log).toEqual(['body', 'disposed']);
});
