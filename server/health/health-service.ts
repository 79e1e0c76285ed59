// Platform health from real checks of what the platform depends on. Later areas register
// their own checks (one per upstream provider group).
export type HealthStatus = 'healthy' | 'degraded' | 'offline';

export interface HealthCheck {
  id: string;
  name: string;
  /** A failing critical dependency takes the platform offline; any other only degrades it. */
  critical: boolean;
  /**
   * Resolves when the dependency answers; rejects or times out when it does not. A check
   * fed by background probes says when it last checked (`checkedAt`, ms since the epoch).
   */
  probe(): Promise<HealthStatus | { status: HealthStatus; checkedAt: number }>;
}

export interface GatewayHealth {
  id: string;
  name: string;
  status: HealthStatus;
  /** When this check last ran, ms since the epoch. */
  lastHealthCheck: number;
}

export interface HealthReport {
  status: HealthStatus;
  gateways: GatewayHealth[];
}

/** How long one report is served again before the checks run anew (a database ping each). */
export const HEALTH_REPORT_TTL_MS = 1_000;

export class HealthService {
  private readonly checks: HealthCheck[] = [];
  /** The last report (or the one being made: concurrent callers share it) and when it was asked for. */
  private cached: { at: number; report: Promise<HealthReport> } | undefined;

  /**
   * `cacheMs`: a health endpoint polled by load balancers, monitors and dashboards would
   * otherwise ping the database on every call; 0 runs the checks every time.
   */
  constructor(
    private readonly timeoutMs = 2_000,
    private readonly cacheMs = HEALTH_REPORT_TTL_MS,
  ) {}

  register(check: HealthCheck): void {
    this.checks.push(check);
    this.cached = undefined;
  }

  /** The platform's health, at most `cacheMs` old. */
  report(): Promise<HealthReport> {
    const now = Date.now();
    // A clock set back (NTP, a VM resumed) must not keep a report alive until it catches up.
    if (this.cached && now >= this.cached.at && now - this.cached.at < this.cacheMs) return this.cached.report;
    const cached = { at: now, report: this.check() };
    this.cached = cached;
    // A report that failed to be made is not served again.
    cached.report.catch(() => {
      if (this.cached === cached) this.cached = undefined;
    });
    return cached.report;
  }

  private async check(): Promise<HealthReport> {
    const gateways = await Promise.all(
      this.checks.map(async (check) => {
        const probed = await this.probe(check);
        const { status, checkedAt } = typeof probed === 'string' ? { status: probed, checkedAt: Date.now() } : probed;
        return { check, result: { id: check.id, name: check.name, status, lastHealthCheck: checkedAt } satisfies GatewayHealth };
      }),
    );
    const failing = gateways.filter((g) => g.result.status !== 'healthy');
    const status: HealthStatus = failing.some((g) => g.check.critical && g.result.status === 'offline')
      ? 'offline'
      : failing.length > 0
        ? 'degraded'
        : 'healthy';
    return { status, gateways: gateways.map((g) => g.result) };
  }

  private async probe(check: HealthCheck): ReturnType<HealthCheck['probe']> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<HealthStatus>((resolve) => {
      timer = setTimeout(() => resolve('offline'), this.timeoutMs);
    });
    try {
      return await Promise.race([check.probe().catch((): HealthStatus => 'offline'), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}
