// The console's shell: sign-in with an API key (checked against GET /api/v1/session, kept in
// the tab's sessionStorage), the page navigation (a hash route per page), and each page shown
// only when the key holds the scope it needs; otherwise a clear refusal.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import type { Scope, Session } from '../../generated/client/types.gen.js';
import { ApiFailure, call, storedKey } from './api.js';
import { Failure, Loading, Refused } from './components/common.js';
import { Ingestion } from './pages/ingestion.js';
import { Keys } from './pages/keys.js';
import { Models } from './pages/models.js';
import { Overview } from './pages/overview.js';
import { Requests } from './pages/requests.js';
import { Usage } from './pages/usage.js';

interface Page {
  id: string;
  title: string;
  scope: Scope;
  render: (session: Session) => unknown;
}

export const PAGES: Page[] = [
  { id: 'overview', title: 'Overview', scope: 'metrics:read', render: () => html`<${Overview} />` },
  { id: 'models', title: 'Models', scope: 'metrics:read', render: () => html`<${Models} />` },
  { id: 'keys', title: 'Keys', scope: 'keys:manage', render: (s) => html`<${Keys} scopes=${s.scopes} />` },
  { id: 'usage', title: 'Usage & billing', scope: 'billing:read', render: () => html`<${Usage} />` },
  { id: 'ingestion', title: 'Ingestion', scope: 'data:read', render: (s) => html`<${Ingestion} scopes=${s.scopes} />` },
  { id: 'requests', title: 'Requests', scope: 'metrics:read', render: () => html`<${Requests} />` },
];

function useHashRoute(): string {
  const read = () => location.hash.replace(/^#\/?/, '') || PAGES[0].id;
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const update = () => setRoute(read());
    addEventListener('hashchange', update);
    return () => removeEventListener('hashchange', update);
  }, []);
  return route;
}

export function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [checking, setChecking] = useState(storedKey.get() !== null);
  const [error, setError] = useState<unknown>(null);
  const route = useHashRoute();

  const signIn = async (key: string) => {
    setError(null);
    setChecking(true);
    try {
      const found = await call<Session>('/api/v1/session', { key });
      storedKey.set(key);
      setSession(found.data);
    } catch (e) {
      storedKey.clear();
      setError(e instanceof ApiFailure && e.status === 401 ? new Error('That key was not accepted (unknown, expired or revoked).') : e);
    } finally {
      setChecking(false);
    }
  };
  const signOut = () => {
    storedKey.clear();
    setSession(null);
  };
  useEffect(() => {
    const key = storedKey.get();
    if (key) void signIn(key);
  }, []);

  if (!session) return checking ? html`<main class="signin"><${Loading} /></main>` : html`<${SignIn} onSignIn=${signIn} error=${error} />`;
  const page = PAGES.find((p) => p.id === route) ?? PAGES[0];
  const allowed = session.scopes.includes(page.scope);
  return html`
    <header class="top">
      <div class="brand">Platform console</div>
      <nav aria-label="Pages">
        ${PAGES.map(
          (p) => html`<a href=${`#/${p.id}`} class=${[p.id === page.id ? 'current' : '', session.scopes.includes(p.scope) ? '' : 'locked'].join(' ')}
            aria-current=${p.id === page.id ? 'page' : undefined} title=${session.scopes.includes(p.scope) ? '' : `needs ${p.scope}`}>${p.title}</a>`,
        )}
      </nav>
      <div class="who">
        <span class="muted">${session.organizationName} · <code>${session.keyPrefix ?? 'token'}</code>${session.label ? ` (${session.label})` : ''}</span>
        <button type="button" class="quiet" onClick=${signOut}>Sign out</button>
      </div>
    </header>
    <main>
      <h1>${page.title}</h1>
      ${allowed ? page.render(session) : html`<${Refused} scope=${page.scope} />`}
    </main>`;
}

function SignIn({ onSignIn, error }: { onSignIn: (key: string) => void; error: unknown }) {
  const [key, setKey] = useState('');
  return html`<main class="signin">
    <h1>Platform console</h1>
    <form class="form card" onSubmit=${(e: Event) => (e.preventDefault(), onSignIn(key.trim()))}>
      <label>API key
        <input name="api-key" type="password" autocomplete="off" value=${key} onInput=${(e: Event) => setKey((e.target as HTMLInputElement).value)} placeholder="sk_…" required />
      </label>
      <p class="muted small">Kept in this tab's session storage only, and sent to this server alone. The pages you see follow the key's scopes.
        The first start printed an admin key; <code>npm run admin</code> makes others.</p>
      ${error ? html`<${Failure} error=${error} />` : null}
      <button type="submit">Sign in</button>
    </form>
  </main>`;
}
