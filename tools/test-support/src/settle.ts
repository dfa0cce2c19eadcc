/**
 * Lets every pending promise chain and I/O callback run: `turns` real macrotask turns. Not a sleep:
 * no time passes on any clock.
 */
export async function settle(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
