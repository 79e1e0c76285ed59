// Keys: the organization's API keys (prefix, label, scopes, limits, status, expiry, last use), a
// form that creates one and shows its secret once, and revoking with a second click.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import type { ApiKey, CreatedApiKey, KeyLimits, Scope } from '../../../generated/client/types.gen.js';
import { call, callAll } from '../api.js';
import { Failure, Loading, Section, Table, useLoad } from '../components/common.js';
import { ago, dollars, time } from '../format.js';

const DAY = 24 * 3_600_000;

/** A key's own limits as chips (updateKey sets them; the CLI too), or a dash when it has none. */
function limitsOf(limits: KeyLimits) {
  const chips = [
    limits.weeklyCapMicros !== null ? `cap ${dollars(limits.weeklyCapMicros)}/week` : null,
    limits.creditSharePercent !== null ? `${limits.creditSharePercent}% of credit/week` : null,
    ...(limits.allowedModels ?? []).map((pattern) => `model ${pattern}`),
  ].filter((chip): chip is string => chip !== null);
  return chips.length ? html`<span class="scopes">${chips.map((c) => html`<span class="chip">${c}</span>`)}</span>` : html`<span class="muted">—</span>`;
}

export function Keys({ scopes }: { scopes: readonly Scope[] }) {
  const keys = useLoad(() => callAll<ApiKey>('/api/v1/keys'), []);
  const [created, setCreated] = useState<CreatedApiKey | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  const [confirming, setConfirming] = useState<string | null>(null);

  const revoke = async (id: string) => {
    setActionError(null);
    try {
      await call(`/api/v1/keys/${id}`, { method: 'DELETE' });
      setConfirming(null);
      keys.reload();
    } catch (error) {
      setActionError(error);
    }
  };

  if (keys.error) return html`<${Failure} error=${keys.error} />`;
  if (!keys.data) return html`<${Loading} />`;
  return html`
    ${created
      ? html`<div class="notice secret" role="status">
          <strong>New key “${created.label ?? created.keyPrefix}”.</strong> Copy it now: it is shown this once and never again.
          <pre class="secret-value" data-testid="new-key-secret">${created.key}</pre>
          <button type="button" onClick=${() => navigator.clipboard?.writeText(created.key)}>Copy</button>
          <button type="button" class="quiet" onClick=${() => setCreated(null)}>I have stored it</button>
        </div>`
      : null}
    ${actionError ? html`<${Failure} error=${actionError} />` : null}
    <${CreateKey} scopes=${scopes} onCreated=${(key: CreatedApiKey) => (setCreated(key), keys.reload())} />
    <${Section} title="API keys">
      <${Table}
        head=${['Key', 'Label', 'Scopes', 'Limits', 'Status', 'Created', 'Expires', 'Last used', '']}
        rows=${keys.data.map((k) => [
          html`<code>${k.keyPrefix}</code>`,
          k.label ?? html`<span class="muted">—</span>`,
          html`<span class="scopes">${k.scopes.map((s) => html`<span class="chip">${s}</span>`)}</span>`,
          limitsOf(k.limits),
          html`<span class="badge status-${k.status}">${k.status}</span>`,
          time(k.createdAt),
          k.expiresAt ? time(k.expiresAt) : 'never',
          ago(k.lastUsedAt),
          k.status === 'active'
            ? confirming === k.id
              ? html`<button type="button" class="danger" onClick=${() => revoke(k.id)}>Confirm revoke</button>
                  <button type="button" class="quiet" onClick=${() => setConfirming(null)}>Cancel</button>`
              : html`<button type="button" onClick=${() => setConfirming(k.id)} aria-label=${`Revoke ${k.keyPrefix}`}>Revoke</button>`
            : null,
        ])}
      />
    <//>`;
}

function CreateKey({ scopes, onCreated }: { scopes: readonly Scope[]; onCreated: (key: CreatedApiKey) => void }) {
  const [label, setLabel] = useState('');
  const [chosen, setChosen] = useState<Scope[]>([]);
  const [days, setDays] = useState('');
  const [error, setError] = useState<unknown>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setError(null);
    try {
      const expiresAt = days ? Date.now() + Number(days) * DAY : undefined;
      const created = await call<CreatedApiKey>('/api/v1/keys', { method: 'POST', body: { scopes: chosen, label: label || undefined, expiresAt } });
      setLabel('');
      setChosen([]);
      setDays('');
      onCreated(created.data);
    } catch (e) {
      setError(e);
    }
  };
  const toggle = (scope: Scope) => setChosen((c) => (c.includes(scope) ? c.filter((s) => s !== scope) : [...c, scope]));
  return html`<${Section} title="Create a key">
    <form class="form" onSubmit=${submit}>
      <label>Label <input name="label" value=${label} maxLength=${100} onInput=${(e: Event) => setLabel((e.target as HTMLInputElement).value)} placeholder="CI pipeline" /></label>
      <fieldset>
        <legend>Scopes (a key can grant only scopes it holds)</legend>
        <div class="scope-choices">
          ${scopes.map((s) => html`<label class="check"><input type="checkbox" name="scope" value=${s} checked=${chosen.includes(s)} onChange=${() => toggle(s)} /> ${s}</label>`)}
        </div>
      </fieldset>
      <label>Expires after (days, empty: never) <input name="days" type="number" min="1" max="3650" value=${days} onInput=${(e: Event) => setDays((e.target as HTMLInputElement).value)} /></label>
      ${error ? html`<${Failure} error=${error} />` : null}
      <button type="submit" disabled=${chosen.length === 0}>Create key</button>
    </form>
  <//>`;
}
