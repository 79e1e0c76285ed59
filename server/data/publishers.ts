// Publishers named in a request (`publishers`, `rag_publisher`, a tenant): resolved in one
// query whatever their number, each once.
import type { Publisher, PrismaClient } from '../../generated/prisma/client.js';
import { ApiError } from '../errors.js';
import { PUBLISHERS_HINT } from '../identity/organizations.js';
import type { Principal } from '../identity/principal.js';

/**
 * The caller's publishers of these names, each once, in the order first named. An unknown
 * name is 400 PUBLISHER_NOT_FOUND naming every unknown one; a publisher of another
 * organization is `foreign(name)` (a 403 in the operation's own words).
 */
export async function publishersNamed(prisma: PrismaClient, principal: Principal, names: readonly string[], foreign: (name: string) => ApiError): Promise<Publisher[]> {
  const unique = [...new Set(names)];
  const found = new Map((await prisma.publisher.findMany({ where: { name: { in: unique } } })).map((p) => [p.name, p]));
  const missing = unique.filter((name) => !found.has(name));
  if (missing.length > 0) throw new ApiError('PUBLISHER_NOT_FOUND', `No publisher named ${missing.map((n) => `"${n}"`).join(', ')} (${PUBLISHERS_HINT}).`);
  const publishers = unique.map((name) => found.get(name)!);
  const theirs = publishers.find((p) => p.organizationId !== principal.organizationId);
  if (theirs) throw foreign(theirs.name);
  return publishers;
}
