import type { PlatformApi } from '../../generated/client/sdk.gen.js';
import type { OperationId } from '../../generated/contract/routes.js';

type Op = OperationId & keyof PlatformApi;
type Fn<K extends Op> = PlatformApi[K];
type OptsOf<K extends Op> = Parameters<Fn<K>>[0];
export type ParamsOf<K extends Op> = Pick<OptsOf<K>, Extract<keyof OptsOf<K>, 'body' | 'path' | 'query'>>;
type Res<K extends Op> = Awaited<ReturnType<Fn<K>>>;
export type DataOf<K extends Op> = Res<K> extends infer U ? (U extends { error: undefined; data: infer D } ? D : never) : never;

export const a: DataOf<'listAgents'> = null!;
export const b: ParamsOf<'getAgent'> = { path: { agent_id: 'x' } };
export const c: ParamsOf<'createGuardedChatCompletion'> = { body: { model: 'x', messages: [] } };
export const d: DataOf<'createGuardedChatCompletion'> = null!;
type Check<T extends true> = T;
export type T1 = Check<{} extends ParamsOf<'listAgents'> ? true : false>;
export type T2 = Check<{} extends ParamsOf<'getAgent'> ? false : true>;
type Show<K extends Op> = { [P in K]: DataOf<P> };
export const s: Show<'deleteAgent' | 'getHealth' | 'createOAuthToken'> = null!;
export const bad1: DataOf<'listAgents'> = 5;
export const ok1: DataOf<'listAgents'>['data'][number]['name'] = 'x';
export const ok2: DataOf<'getHealth'>['data']['status'] = 'healthy';
export const ok3: DataOf<'createOAuthToken'>['access_token'] = 'x';
export const bad2: DataOf<'deleteAgent'> = 5;
