// The ingestion worker of one instance: `concurrency` loops that claim due jobs from the
// shared queue and run them, renewing each job's lease on a heartbeat while it runs. On
// stop it claims nothing more, interrupts running jobs at their next step and gives them
// back to the queue, so another instance (or this one restarted) takes them at once.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { errorCatalog } from '../../../generated/contract/errors.js';
import { ApiError } from '../../errors.js';
import { UnreadableDocumentError } from './formats.js';
import { ItemGoneError, LeaseLostError, type ClaimedJob } from './job-queue.js';
import { runJob, type JobOutcome, type PipelineDeps } from './pipeline.js';

export interface WorkerOptions {
  /** Jobs run at once (0: this instance runs only the jobs it is handed, e.g. real-time uploads). */
  concurrency: number;
  /** How often an idle loop looks for due jobs (other instances' uploads, retries coming due). */
  pollMs: number;
}

class Shutdown extends Error {
  override readonly name = 'Shutdown';
}

/** Whether a failure may pass on a later attempt. */
function retryable(error: unknown): boolean {
  if (error instanceof UnreadableDocumentError) return false;
  if (error instanceof ApiError) return errorCatalog[error.errorName].retryable;
  return !(error instanceof RangeError);
}

export class IngestionWorker {
  /** Who holds a lease: unique per process start, readable in the jobs table. */
  readonly owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly running = new Map<string, { controller: AbortController; done: Promise<unknown> }>();
  private loops: Promise<void>[] = [];
  private stopping = false;
  private wakeIdle: (() => void) | undefined;

  constructor(
    private readonly deps: PipelineDeps,
    private readonly logger: Logger,
    private readonly options: WorkerOptions,
  ) {}

  start(): void {
    for (let i = 0; i < this.options.concurrency; i++) this.loops.push(this.loop());
  }

  /** A job was just queued here: idle loops look now rather than at their next poll. */
  wake(): void {
    this.wakeIdle?.();
  }

  /** Runs a job this instance already holds; the failure, if any, is recorded and thrown. */
  async run(job: ClaimedJob): Promise<JobOutcome> {
    return this.execute(job);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    for (const { controller } of this.running.values()) controller.abort(new Shutdown('the server is shutting down'));
    await Promise.allSettled([...this.loops, ...[...this.running.values()].map((r) => r.done)]);
    this.loops = [];
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      let job: ClaimedJob | null = null;
      try {
        job = await this.deps.queue.claim(this.owner);
      } catch (error) {
        if (this.stopping) return;
        this.logger.warn({ err: error }, 'ingestion: claiming a job failed; retrying');
      }
      if (!job) {
        await this.idle();
        continue;
      }
      await this.execute(job).catch(() => undefined);
    }
  }

  private idle(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        if (this.wakeIdle === done) this.wakeIdle = undefined;
        resolve();
      };
      const timer = setTimeout(done, this.options.pollMs);
      // Several idle loops: waking one wakes the chain, each passes it on.
      const previous = this.wakeIdle;
      this.wakeIdle = () => {
        previous?.();
        done();
      };
    });
  }

  private async execute(job: ClaimedJob): Promise<JobOutcome> {
    const { queue } = this.deps;
    const controller = new AbortController();
    if (this.stopping) controller.abort(new Shutdown('the server is shutting down'));
    const heartbeat = setInterval(() => {
      queue.renew(job, this.owner).then(
        (held) => held || controller.abort(new LeaseLostError(`job ${job.id} was taken over`)),
        (error: unknown) => this.logger.warn({ err: error, jobId: job.id }, 'ingestion: lease renewal failed'),
      );
    }, Math.max(250, Math.floor(queue.options.leaseMs / 3)));
    const log = this.logger.child({ jobId: job.id, itemId: job.itemId, attempt: job.attempts });
    const started = performance.now();
    const done = (async () => {
      try {
        const outcome = await runJob(job, this.owner, this.deps, controller.signal);
        log.info({ chunks: outcome.chunkCount, ms: Math.round(performance.now() - started) }, 'ingestion: item indexed');
        return outcome;
      } catch (caught) {
        const error = controller.signal.aborted && !(caught instanceof UnreadableDocumentError) ? (controller.signal.reason ?? caught) : caught;
        await this.settle(job, error, log);
        throw error;
      } finally {
        clearInterval(heartbeat);
      }
    })();
    this.running.set(job.id, { controller, done: done.catch(() => undefined) });
    try {
      return await done;
    } finally {
      this.running.delete(job.id);
    }
  }

  /** Records how an attempt ended when it did not succeed. */
  private async settle(job: ClaimedJob, error: unknown, log: Logger): Promise<void> {
    const { queue } = this.deps;
    try {
      if (error instanceof LeaseLostError) {
        log.warn('ingestion: job taken over by another worker; this attempt stops');
      } else if (error instanceof Shutdown) {
        await queue.release(job, this.owner);
        log.info('ingestion: job given back at shutdown');
      } else if (error instanceof ItemGoneError) {
        await queue.drop(job, this.owner);
        log.info('ingestion: item deleted while ingesting; job dropped');
      } else {
        const reason = error instanceof Error ? error.message : String(error);
        const outcome = await queue.fail(job, this.owner, reason, retryable(error));
        log[outcome === 'failed' ? 'error' : 'warn']({ err: error, outcome }, `ingestion: attempt failed (${outcome})`);
      }
    } catch (recordError) {
      // The lease runs out and another worker takes the job: nothing is lost.
      log.error({ err: recordError }, 'ingestion: could not record the attempt; the lease will expire');
    }
  }
}
