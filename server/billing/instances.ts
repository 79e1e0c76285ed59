// Which processes are alive, for releasing the billing holds of dead ones. Each process is
// an incarnation (a random id) of an instance (INSTANCE_ID: stable across restarts); it
// records itself in billing_instances and beats every HEARTBEAT_MS. An incarnation is dead
// when its heartbeat is older than DEAD_AFTER_MS, or at once when a new incarnation of the
// same instance starts (a restart frees what the crashed process held). Holds record the
// incarnation that took them (in the database, or in Redis: redis-holds.ts).
import { randomUUID } from 'node:crypto';
import type { PrismaClient } from '../../generated/prisma/client.js';

/** Open holds older than this are released whoever took them (no request runs that long). */
export const RESERVATION_TTL_MS = 15 * 60_000;
export const HEARTBEAT_MS = 10_000;
/** Three missed heartbeats. */
export const DEAD_AFTER_MS = 3 * HEARTBEAT_MS;
/** A heartbeat this old marks an incarnation dead at once (as if it had missed its beats). */
const DEAD = `${DEAD_AFTER_MS + 1_000} milliseconds`;
/** How long a dead incarnation is listed (holds older than this are released by age anyway). */
const FORGET_AFTER_MS = 60 * 60_000;

export class Incarnations {
  readonly incarnation = randomUUID();
  private deadList: string[] = [];

  constructor(
    private readonly prisma: PrismaClient,
    readonly instanceId: string,
  ) {}

  /** Records this process, ends earlier incarnations of the same instance, and reads which are dead. */
  async register(): Promise<void> {
    await this.prisma.$transaction([
      this.prisma.$executeRaw`
        UPDATE billing_instances SET heartbeat_at = now() - ${DEAD}::interval
        WHERE instance_id = ${this.instanceId} AND incarnation <> ${this.incarnation}::uuid AND heartbeat_at > now() - ${DEAD}::interval`,
      this.prisma.$executeRaw`INSERT INTO billing_instances (incarnation, instance_id) VALUES (${this.incarnation}::uuid, ${this.instanceId})`,
    ]);
    await this.refresh();
  }

  /** One heartbeat: this process is alive; then the dead list is read again (on the database's clock). */
  async beat(): Promise<void> {
    await this.prisma.$executeRaw`UPDATE billing_instances SET heartbeat_at = now() WHERE incarnation = ${this.incarnation}::uuid`;
    await this.refresh();
  }

  /** Incarnations whose holds are to be released: stopped beating, or replaced by a restart. */
  get dead(): readonly string[] {
    return this.deadList;
  }

  /** On a clean shutdown, after every settlement: dead at once, so anything it still holds is released by the others. */
  async deregister(): Promise<void> {
    await this.prisma.$executeRaw`UPDATE billing_instances SET heartbeat_at = now() - ${DEAD}::interval WHERE incarnation = ${this.incarnation}::uuid`;
  }

  private async refresh(): Promise<void> {
    const deadAfter = `${DEAD_AFTER_MS} milliseconds`;
    const forgetAfter = `${FORGET_AFTER_MS} milliseconds`;
    await this.prisma.$executeRaw`DELETE FROM billing_instances WHERE heartbeat_at < now() - ${forgetAfter}::interval`;
    const rows = await this.prisma.$queryRaw<{ incarnation: string }[]>`
      SELECT incarnation::text FROM billing_instances WHERE heartbeat_at < now() - ${deadAfter}::interval`;
    this.deadList = rows.map((r) => r.incarnation);
  }
}
