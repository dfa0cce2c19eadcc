/** Real macrotask turns, so Node can run callbacks and report unhandled rejections; no clock moves. */
export async function macrotaskTurns(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
