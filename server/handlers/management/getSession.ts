import { callerOf, type AppHandler } from '../../http/handler.js';
import { meta } from '../../http/envelope.js';

export const getSession = (async (_request, ctx) => {
  const caller = callerOf(ctx);
  const { identity } = ctx.services;
  const [organization, key] = await Promise.all([
    identity.organizations.organization(caller.organizationId),
    caller.kind === 'api_key' ? identity.keys.get(caller.organizationId, caller.credentialId) : null,
  ]);
  return {
    status: 200,
    body: {
      data: {
        organizationId: organization.id,
        organizationName: organization.name,
        keyId: key?.id ?? null,
        keyPrefix: key?.keyPrefix ?? null,
        label: key?.label ?? null,
        scopes: [...caller.scopes],
      },
      meta: meta(ctx),
    },
  };
}) satisfies AppHandler<'getSession'>;
