/**
 * Child-process entry of the memory method (`memory.ts`): receives one {@link SyncJob} over IPC,
 * measures that one sync cold in this fresh process, sends the reading and exits.
 */
import { syncClientNode, syncReflector } from './initial-sync.js';
import { measureSync, type MemoryReading, type SyncJob } from './memory.js';

process.once('message', (job: SyncJob) => {
  measureSync(
    () =>
      job.kind === 'client-node'
        ? syncClientNode(job.kubeconfig, job.pods)
        : syncReflector(job.kubeconfig, job.pods, {
            initialList: job.initialList,
            listPageSize: job.listPageSize,
            ...(job.listTimeoutMs !== undefined && { listTimeoutMs: job.listTimeoutMs }),
          }),
    job.live === true,
  ).then(
    (reading: MemoryReading) => {
      if (reading.objects !== job.pods) throw new Error(`synced ${reading.objects} of ${job.pods} objects`);
      process.send!({ ok: true, reading }, () => process.exit(0));
    },
    (error: unknown) =>
      process.send!({ ok: false, error: error instanceof Error ? (error.stack ?? error.message) : String(error) }, () =>
        process.exit(1),
      ),
  );
});
// The parent went away: nothing left to report to.
process.on('disconnect', () => process.exit(0));
process.send!('ready');
