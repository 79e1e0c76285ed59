// Stored responses (`store`, the default): each row keeps the whole conversation before the
// answer (earlier turns included) and the answer's output, so `previous_response_id` is one
// lookup. Rows belong to an organization (another one's id is not found) and expire after
// the configured retention; a sweep deletes expired rows.
import type { Prisma, PrismaClient } from '../../generated/prisma/client.js';
import type { InputItem, OutputItem } from './types.js';

export interface StoredConversation {
  /** Input items of every turn up to the stored answer, then its output items. */
  items: InputItem[];
  model: string;
}

export interface ResponseRecord {
  id: string;
  organizationId: string;
  previousResponseId: string | null;
  model: string;
  status: string;
  input: InputItem[];
  output: OutputItem[];
}

export class ResponseStore {
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly prisma: PrismaClient,
    private readonly retentionMs: number,
  ) {}

  async save(record: ResponseRecord): Promise<void> {
    await this.prisma.storedResponse.create({
      data: {
        ...record,
        input: record.input as unknown as Prisma.InputJsonValue,
        output: record.output as unknown as Prisma.InputJsonValue,
        expiresAt: new Date(Date.now() + this.retentionMs),
      },
    });
  }

  /** The conversation a follow-up continues; null when unknown, expired or another organization's. */
  async conversation(organizationId: string, id: string): Promise<StoredConversation | null> {
    const row = await this.prisma.storedResponse.findFirst({
      where: { id, organizationId, expiresAt: { gt: new Date() } },
      select: { input: true, output: true, model: true },
    });
    if (!row) return null;
    // Output items are valid input items (OpenAI's conversation-state rule).
    return { items: [...(row.input as unknown as InputItem[]), ...(row.output as unknown as InputItem[])], model: row.model };
  }

  startSweeping(intervalMs = 10 * 60 * 1000): () => void {
    this.sweeper = setInterval(() => {
      this.prisma.storedResponse.deleteMany({ where: { expiresAt: { lt: new Date() } } }).catch(() => undefined);
    }, intervalMs);
    this.sweeper.unref();
    return () => clearInterval(this.sweeper);
  }
}
