// Operator CLI: `npm run admin -- <command> …`. Works on the configured database
// (DATABASE_URL, or the embedded PGlite in DATA_DIR: stop the server first, PGlite has
// one owner). Secrets it creates are printed once.
import { parseArgs } from 'node:util';
import { scopes as allScopes, type Scope } from '../generated/contract/routes.js';
import { CreditService, formatUsd, usdToMicros } from '../server/billing/credit.js';
import { loadConfig } from '../server/config.js';
import { createIdentity } from '../server/identity/index.js';
import { createLogger } from '../server/logging.js';
import { openDatabase } from '../server/storage/database.js';
import { connectRedis } from '../server/storage/redis.js';

const USAGE = `Usage: npm run admin -- <command> [options]

  create-org <name>                        a new organization
  create-publisher <org> <name>            a publisher of an organization (names are global)
  create-key <org> [--scopes a,b] [--label text] [--expires-in-days n]
                                           an API key (all scopes unless --scopes)
  create-oauth-client <org> [--scopes a,b] deprecated OAuth client credentials
  revoke-oauth-client <client_id>          revokes the client and its tokens
  add-credit <org> <usd> [--reason text]   prepaid credit for the billing gate
  list-orgs                                organizations with their publishers

Scopes: ${Object.keys(allScopes).join(', ')}`;

/** Arguments each command needs. */
const ARITY: Record<string, number> = {
  'create-org': 1,
  'create-publisher': 2,
  'create-key': 1,
  'create-oauth-client': 1,
  'revoke-oauth-client': 1,
  'add-credit': 2,
  'list-orgs': 0,
};

function parseScopes(value: string | undefined): Scope[] {
  if (!value) return Object.keys(allScopes) as Scope[];
  const list = value.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = list.filter((s) => !(s in allScopes));
  if (unknown.length > 0) throw new Error(`unknown scope(s): ${unknown.join(', ')}`);
  return list as Scope[];
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      scopes: { type: 'string' },
      label: { type: 'string' },
      'expires-in-days': { type: 'string' },
      reason: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [command, ...args] = positionals;
  if (!command || values.help) {
    console.log(USAGE);
    return;
  }
  if (!(command in ARITY)) throw new Error(`unknown command "${command}"\n\n${USAGE}`);
  if (args.length < ARITY[command]) throw new Error(`${command} needs ${ARITY[command]} argument(s)\n\n${USAGE}`);
  // Checked before the database is opened, so a typo costs nothing.
  const scopes = parseScopes(values.scopes);
  const credit = command === 'add-credit' ? usdToMicros(args[1]) : null;
  if (command === 'add-credit' && (credit === null || credit <= 0n)) throw new Error('the amount must be a positive number of US dollars, e.g. 25.00');
  const days = values['expires-in-days'] ? Number(values['expires-in-days']) : undefined;
  if (days !== undefined && !(days > 0)) throw new Error('--expires-in-days must be a positive number');

  const config = loadConfig();
  const logger = createLogger('warn');
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, logger });
  const redis = config.redisUrl ? await connectRedis(config.redisUrl, logger) : null;
  const identity = await createIdentity({ database, redis, logger, credentialCacheTtlMs: config.credentialCacheTtlMs });
  const { prisma } = database;
  try {
    switch (command) {
      case 'create-org': {
        const org = await identity.organizations.createOrganization(args[0]);
        console.log(`organization ${org.name} (${org.id})`);
        break;
      }
      case 'create-publisher': {
        const publisher = await identity.organizations.createPublisher(args[0], args[1]);
        console.log(`publisher ${publisher.name} (${publisher.id})`);
        break;
      }
      case 'create-key': {
        const org = await identity.organizations.findOrganization(args[0]);
        const { key, plaintext } = await identity.keys.issue(org.id, {
          scopes,
          label: values.label ?? null,
          expiresAt: days ? Date.now() + days * 86_400_000 : null,
        });
        console.log(`key ${key.id} for ${org.name}, scopes ${key.scopes.join(', ')}\n\n  ${plaintext}\n\nIt will not be shown again.`);
        break;
      }
      case 'create-oauth-client': {
        const org = await identity.organizations.findOrganization(args[0]);
        const client = await identity.oauth.createClient(org.id, scopes);
        console.log(`client_id:     ${client.clientId}\nclient_secret: ${client.clientSecret}\n\nThe secret will not be shown again. OAuth client credentials are deprecated: prefer create-key.`);
        break;
      }
      case 'revoke-oauth-client': {
        if (!(await identity.oauth.revokeClient(args[0]))) throw new Error(`no OAuth client ${args[0]}`);
        console.log(`revoked ${args[0]} and its tokens`);
        break;
      }
      case 'add-credit': {
        const org = await identity.organizations.findOrganization(args[0]);
        const balance = await new CreditService(prisma).add(org.id, credit!, values.reason ?? 'operator top-up');
        console.log(`added ${formatUsd(credit!)} to ${org.name}; ledger balance ${formatUsd(balance)}`);
        break;
      }
      case 'list-orgs': {
        const orgs = await prisma.organization.findMany({ include: { publishers: true }, orderBy: { createdAt: 'asc' } });
        for (const org of orgs) {
          console.log(`${org.name} (${org.id})`);
          for (const p of org.publishers) console.log(`  publisher ${p.name} (${p.id})`);
        }
        break;
      }
    }
  } finally {
    await identity.close();
    await redis?.close();
    await database.close();
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
