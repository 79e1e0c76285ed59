// First start on an empty database: a default organization and publisher, and one admin
// key printed once so an operator can reach the management API.
import type { Logger } from 'pino';
import type { PrismaClient } from '../../generated/prisma/client.js';
import { scopes, type Scope } from '../../generated/contract/routes.js';
import { newKeyRecord } from './api-keys.js';
import { PUBLISHERS_HINT } from './organizations.js';

export const DEFAULT_ORGANIZATION = 'default';
export const DEFAULT_PUBLISHER = 'default';

export interface BootstrapResult {
  organizationId: string;
  publisherId: string;
  /** Plaintext admin key; present only on the start that created it. */
  adminKey?: string;
}

export async function bootstrapIdentity(prisma: PrismaClient, logger: Logger, printKey: boolean): Promise<BootstrapResult | null> {
  try {
    return await createDefaults(prisma, logger, printKey);
  } catch (error) {
    // Two instances starting on one empty database: the loser's serializable transaction
    // fails (P2034) or hits the unique name; by then the winner has bootstrapped.
    const code = (error as { code?: string }).code;
    if (code === 'P2034' || code === 'P2002') return null;
    throw error;
  }
}

function createDefaults(prisma: PrismaClient, logger: Logger, printKey: boolean): Promise<BootstrapResult | null> {
  // Serializable so two instances starting on one empty database create one organization.
  return prisma.$transaction(
    async (tx) => {
      if ((await tx.organization.count()) > 0) return null;
      const organization = await tx.organization.create({ data: { name: DEFAULT_ORGANIZATION } });
      const publisher = await tx.publisher.create({ data: { name: DEFAULT_PUBLISHER, organizationId: organization.id } });
      const key = newKeyRecord(organization.id, { scopes: Object.keys(scopes) as Scope[], label: 'bootstrap admin' });
      await tx.apiKey.create({ data: key.data });
      logger.info({ organizationId: organization.id, publisherId: publisher.id }, 'created the default organization and publisher');
      if (printKey) {
        process.stdout.write(
          `\nAdmin API key (all scopes) for organization "${DEFAULT_ORGANIZATION}":\n\n  ${key.plaintext}\n\nIt will not be shown again: store it now.\n\n` +
            `Default publisher: "${DEFAULT_PUBLISHER}", id ${publisher.id}\n` +
            `  (ingestion takes the id as publisher_id, search the name; ${PUBLISHERS_HINT})\n\n`,
        );
      }
      return { organizationId: organization.id, publisherId: publisher.id, adminKey: key.plaintext };
    },
    { isolationLevel: 'Serializable' },
  );
}
