// Operator CLI: `npm run admin -- <command> …`. Works on the configured database
// (DATABASE_URL, or the embedded PGlite in DATA_DIR: stop the server first, PGlite has
// one owner). Secrets it creates are printed once.
import { parseArgs } from 'node:util';
import { scopes as allScopes, type Scope } from '../generated/contract/routes.js';
import { BillingService } from '../server/billing/billing-service.js';
import { BILLING_MODES, type BillingMode } from '../server/billing/accounts.js';
import { CreditService, formatUsd, usdToMicros } from '../server/billing/credit.js';
import { localSettingsChanges, redisSettingsChanges } from '../server/billing/settings-cache.js';
import { weekStart } from '../server/billing/pricing.js';
import { loadCatalog } from '../server/gateway/catalog.js';
import { QUOTA_CACHE_MS, QuotaSettings } from '../server/limits/quotas.js';
import { loadConfig } from '../server/config.js';
import { spendLimited, type KeyLimits } from '../server/identity/api-keys.js';
import { createIdentity } from '../server/identity/index.js';
import { patternProblem } from '../server/identity/model-access.js';
import { createLogger } from '../server/logging.js';
import { Metrics } from '../server/observability/metrics.js';
import { openDatabase } from '../server/storage/database.js';
import { connectRedis } from '../server/storage/redis.js';

const USAGE = `Usage: npm run admin -- <command> [options]

  create-org <name>                        a new organization
  create-publisher <org> <name>            a publisher of an organization (names are global)
  create-key <org> [--scopes a,b] [--label text] [--expires-in-days n] [limits]
                                           an API key (all scopes but billing:manage unless
                                           --scopes: that one lets a key credit its own
                                           organization; give it only to the payment system)
  set-key-limits <org> <key id> [limits]   changes a key's limits (those given; none: removed)
      limits: --weekly-cap <usd|none>      the key's weekly spending cap
              --credit-share <1-100|none>  percent of the organization's credit per week
              --models <a,b|all>           models allowed: ids or family/ids, * for any
                                           characters (gpt-4o*, anthropic/*); all: every model
  create-oauth-client <org> [--scopes a,b] deprecated OAuth client credentials
  revoke-oauth-client <client_id>          revokes the client and its tokens
  add-credit <org> <usd> [--reason text]   prepaid credit for the billing gate
  set-billing <org> prepaid|unmetered      billing mode (new organizations: unmetered, no gate)
  set-weekly-cap <org> <usd|none>          weekly spending cap of an organization
                                           (ISO week: Monday 00:00 UTC to Monday 00:00 UTC)
  set-coding-plan <org> <product> <usd> [--topup] [--period month|week]
                                           coding-agent allowance per period (default month)
  set-rate-limit <org> [--key <key id>] [--rpm n] [--tpm n]
                                           requests / tokens per minute of the organization,
                                           or of one of its keys (over its plan's); neither:
                                           back to the plan's
  set-rate-plan <org> <plan|default>       the organization's rate-limit plan (RATE_LIMIT_PLANS)
  usage <org> [--since YYYY-MM-DD]         usage per model (default: since this week's Monday)
  list-orgs                                organizations with their publishers

Scopes: ${Object.keys(allScopes).join(', ')}`;

/** Arguments each command needs. */
const ARITY: Record<string, number> = {
  'create-org': 1,
  'create-publisher': 2,
  'create-key': 1,
  'set-key-limits': 2,
  'create-oauth-client': 1,
  'revoke-oauth-client': 1,
  'add-credit': 2,
  'set-billing': 2,
  'set-weekly-cap': 2,
  'set-coding-plan': 3,
  'set-rate-limit': 1,
  'set-rate-plan': 2,
  usage: 1,
  'list-orgs': 0,
};

function parseScopes(value: string | undefined): Scope[] {
  if (!value) return (Object.keys(allScopes) as Scope[]).filter((s) => s !== 'billing:manage');
  const list = value.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = list.filter((s) => !(s in allScopes));
  if (unknown.length > 0) throw new Error(`unknown scope(s): ${unknown.join(', ')}`);
  return list as Scope[];
}

/** The limits options given (absent: unchanged); `none` / `all` remove a limit. Checked before the database is opened. */
function keyLimits(values: { 'weekly-cap'?: string; 'credit-share'?: string; models?: string }): Partial<KeyLimits> {
  const limits: Partial<KeyLimits> = {};
  const cap = values['weekly-cap'];
  if (cap !== undefined) {
    const micros = cap === 'none' ? null : usdToMicros(cap);
    if (cap !== 'none' && micros === null) throw new Error('--weekly-cap must be a number of US dollars, e.g. 50.00, or none');
    limits.weeklyCapMicros = micros === null ? null : Number(micros);
  }
  const share = values['credit-share'];
  if (share !== undefined) {
    const percent = share === 'none' ? null : Number(share);
    if (percent !== null && !(Number.isInteger(percent) && percent >= 1 && percent <= 100)) throw new Error('--credit-share must be a whole percent from 1 to 100, or none');
    limits.creditSharePercent = percent;
  }
  if (values.models !== undefined) {
    const models = values.models === 'all' ? null : values.models.split(',').map((m) => m.trim()).filter(Boolean);
    const problem = models && patternProblem(models);
    if (problem) throw new Error(`--models: ${problem}`);
    limits.allowedModels = models;
  }
  return limits;
}

function describeLimits(limits: KeyLimits): string {
  const parts = [
    limits.weeklyCapMicros === null ? 'no weekly cap' : `weekly cap ${formatUsd(BigInt(limits.weeklyCapMicros))}`,
    limits.creditSharePercent === null ? 'no credit share' : `${limits.creditSharePercent}% of the organization's credit per week`,
    limits.allowedModels === null ? 'every model' : `models ${limits.allowedModels.join(', ')}`,
  ];
  return parts.join(', ');
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      scopes: { type: 'string' },
      label: { type: 'string' },
      'expires-in-days': { type: 'string' },
      reason: { type: 'string' },
      topup: { type: 'boolean' },
      period: { type: 'string' },
      since: { type: 'string' },
      key: { type: 'string' },
      rpm: { type: 'string' },
      tpm: { type: 'string' },
      'weekly-cap': { type: 'string' },
      'credit-share': { type: 'string' },
      models: { type: 'string' },
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
  const mode = command === 'set-billing' ? (args[1] as BillingMode) : null;
  if (mode !== null && !BILLING_MODES.includes(mode)) throw new Error(`the billing mode must be one of ${BILLING_MODES.join(', ')}`);
  const cap = command === 'set-weekly-cap' && args[1] !== 'none' ? usdToMicros(args[1]) : null;
  if (command === 'set-weekly-cap' && args[1] !== 'none' && cap === null) throw new Error('the cap must be a number of US dollars, e.g. 100.00, or none');
  const allowance = command === 'set-coding-plan' ? usdToMicros(args[2]) : null;
  if (command === 'set-coding-plan' && allowance === null) throw new Error('the allowance must be a number of US dollars, e.g. 20.00');
  const period = values.period ?? 'month';
  if (period !== 'month' && period !== 'week') throw new Error('--period must be month or week');
  const since = values.since ? new Date(`${values.since}T00:00:00Z`) : weekStart();
  if (Number.isNaN(since.getTime())) throw new Error('--since must be a date, YYYY-MM-DD');
  const perMinute = (name: 'rpm' | 'tpm') => {
    const value = values[name];
    if (value === undefined) return null;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1 || n > 2_000_000_000) throw new Error(`--${name} must be a whole number from 1 to 2000000000`);
    return n;
  };
  const quota = { requestsPerMinute: perMinute('rpm'), tokensPerMinute: perMinute('tpm') };
  const limits = keyLimits(values);
  const days = values['expires-in-days'] ? Number(values['expires-in-days']) : undefined;
  if (days !== undefined && !(days > 0)) throw new Error('--expires-in-days must be a positive number');

  const config = loadConfig();
  const logger = createLogger('warn');
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, logger });
  const redis = config.redisUrl ? await connectRedis(config.redisUrl, logger) : null;
  const identity = await createIdentity({ database, redis, logger, credentialCacheTtlMs: config.credentialCacheTtlMs });
  const { prisma } = database;
  // With REDIS_URL, running servers drop their cached billing settings at once; without it,
  // within BILLING_SETTINGS_CACHE_MS (server/billing/settings-cache.ts).
  const billingChanges = redis ? await redisSettingsChanges(redis, logger) : localSettingsChanges();
  // With REDIS_URL, changes also reach the servers' copies of the billing gates at once.
  const billingService = new BillingService(prisma, { catalog: loadCatalog() }, logger, { changes: billingChanges, hot: redis ? { redis: redis.hotPath, metrics: new Metrics() } : undefined });
  const billing = () => billingService;
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
          limits,
        });
        if (spendLimited(key.limits)) await billing().accounts.syncKeyPool(org.id, key.id);
        console.log(`key ${key.id} for ${org.name}, scopes ${key.scopes.join(', ')}; ${describeLimits(key.limits)}\n\n  ${plaintext}\n\nIt will not be shown again.`);
        break;
      }
      case 'set-key-limits': {
        const org = await identity.organizations.findOrganization(args[0]);
        if (Object.keys(limits).length === 0) throw new Error('give at least one of --weekly-cap, --credit-share, --models');
        const key = await identity.keys.amend(org.id, args[1], { limits });
        if (spendLimited(key.limits)) await billing().accounts.syncKeyPool(org.id, key.id);
        // Running servers drop the key's cached principal at once with REDIS_URL, else within the credential cache TTL.
        console.log(`key ${key.id} of ${org.name}: ${describeLimits(key.limits)}`);
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
        const entry = await billing().accounts.addCredit(org.id, credit!, values.reason ?? 'operator top-up');
        console.log(`added ${formatUsd(credit!)} to ${org.name}; ledger balance ${formatUsd(entry.balanceMicros)}`);
        break;
      }
      case 'set-billing': {
        const org = await identity.organizations.findOrganization(args[0]);
        await billing().accounts.setMode(org.id, mode!);
        console.log(`${org.name} is ${mode}${mode === 'prepaid' ? `: requests need credit (balance ${formatUsd(await new CreditService(prisma).balance(org.id))})` : ': usage is recorded, nothing is gated'}`);
        break;
      }
      case 'set-weekly-cap': {
        const org = await identity.organizations.findOrganization(args[0]);
        await billing().accounts.setWeeklyCap(org.id, cap);
        console.log(cap === null ? `${org.name} has no weekly cap` : `${org.name}: weekly cap ${formatUsd(cap)} (weeks start Monday 00:00 UTC)`);
        break;
      }
      case 'set-coding-plan': {
        const org = await identity.organizations.findOrganization(args[0]);
        await billing().accounts.setCodingPlan(org.id, args[1], { allowanceMicros: allowance!, topupAvailable: values.topup === true, period });
        console.log(`${org.name}: ${args[1]} plan, ${formatUsd(allowance!)} per ${period}${values.topup ? ', top-up available' : ''}`);
        break;
      }
      case 'set-rate-limit': {
        const org = await identity.organizations.findOrganization(args[0]);
        await new QuotaSettings(prisma, config).set(org.id, values.key ?? null, quota);
        const whose = values.key ? `key ${values.key} of ${org.name}` : org.name;
        const limits = [quota.requestsPerMinute && `${quota.requestsPerMinute} requests`, quota.tokensPerMinute && `${quota.tokensPerMinute} tokens`].filter(Boolean);
        console.log(`${whose}: ${limits.length === 0 ? "its plan's limits" : `${limits.join(' and ')} per minute`} (in effect within ${QUOTA_CACHE_MS / 1000} s)`);
        break;
      }
      case 'set-rate-plan': {
        const org = await identity.organizations.findOrganization(args[0]);
        const plan = args[1] === 'default' ? null : args[1];
        await new QuotaSettings(prisma, config).setPlan(org.id, plan);
        const name = plan ?? config.rateLimitDefaultPlan;
        const limits = name ? JSON.stringify(config.rateLimitPlans[name]) : 'no default limits';
        console.log(`${org.name}: rate-limit plan ${plan ?? `default (${name ?? 'none'})`}: ${limits} (in effect within ${QUOTA_CACHE_MS / 1000} s)`);
        break;
      }
      case 'usage': {
        const org = await identity.organizations.findOrganization(args[0]);
        const lines = await billing().accounts.usage(org.id, since);
        console.log(`usage of ${org.name} since ${since.toISOString()}`);
        console.log(['model', 'calls', 'input tokens', 'output tokens', 'cost', 'billed'].join('\t'));
        for (const l of lines) console.log([l.group ?? '-', l.calls, l.inputTokens, l.outputTokens, formatUsd(l.costMicros), formatUsd(l.billedMicros)].join('\t'));
        const total = lines.reduce((sum, l) => sum + l.billedMicros, 0n);
        console.log(`total billed ${formatUsd(total)}`);
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
    await billingChanges.close();
    await identity.close();
    await redis?.close();
    await database.close();
  }
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
