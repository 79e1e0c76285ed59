// Models and deployments: each catalog model with the deployments serving it, and each
// deployment's circuit (closed, half-open, open), failures, last error and next trial,
// polled every few seconds.
import { html } from 'htm/preact';
import type { GatewayDeployment } from '../../../generated/client/types.gen.js';
import { call } from '../api.js';
import { Failure, Loading, Section, Table, useLoad } from '../components/common.js';
import { ago, time } from '../format.js';

export const DEPLOYMENTS_POLL_MS = 3_000;

const STATE_LABEL = { closed: 'healthy', half_open: 'trying', open: 'open' } as const;

const State = ({ state }: { state: GatewayDeployment['state'] }) => html`<span class="badge state-${state}">${STATE_LABEL[state]} · ${state.replace('_', '-')}</span>`;

export function Models() {
  const deployments = useLoad(() => call<GatewayDeployment[]>('/api/v1/gateway/deployments').then((r) => r.data), [], DEPLOYMENTS_POLL_MS);
  if (deployments.error && !deployments.data) return html`<${Failure} error=${deployments.error} />`;
  if (!deployments.data) return html`<${Loading} />`;
  const list = deployments.data;
  const models = new Map<string, GatewayDeployment[]>();
  for (const d of list) for (const m of d.models) models.set(m, [...(models.get(m) ?? []), d]);
  const open = list.filter((d) => d.state !== 'closed').length;
  return html`
    <p class="muted live">Live: refreshed every ${DEPLOYMENTS_POLL_MS / 1000} s · last at ${deployments.at ? time(deployments.at) : '—'} UTC
      ${open > 0 ? html` · <span class="bad">${open} deployment${open > 1 ? 's' : ''} not healthy</span>` : html` · all deployments healthy`}</p>
    ${deployments.error ? html`<${Failure} error=${deployments.error} />` : null}
    <${Section} title="Catalog">
      <${Table}
        head=${['Model', 'Deployments', 'Health']}
        rows=${[...models].map(([model, ds]) => [
          html`<code>${model}</code>`,
          ds.map((d) => d.id).join(', '),
          ds.every((d) => d.state === 'closed') ? html`<span class="badge state-closed">available</span>` : ds.some((d) => d.state === 'closed') ? html`<span class="badge state-half_open">degraded</span>` : html`<span class="badge state-open">down</span>`,
        ])}
      />
    <//>
    <${Section} title="Deployments">
      <${Table}
        head=${['Deployment', 'Provider', 'Upstream model', 'Circuit', 'Failures', 'Last error', 'Next trial', 'In flight', 'Changed']}
        rows=${list.map((d) => [
          html`<code>${d.id}</code>`,
          d.provider,
          d.upstreamModel,
          html`<${State} state=${d.state} />`,
          String(d.failures),
          d.lastError ?? html`<span class="muted">none</span>`,
          d.nextTrialAt ? time(d.nextTrialAt) : '—',
          String(d.inFlight),
          ago(d.lastChange),
        ])}
      />
    <//>`;
}
