// Platform health from real checks of what the platform depends on. Later areas register
// their own checks (one per upstream provider group).
export type HealthStatus = 'healthy' | 'degraded' | 'offline';

export interface HealthCheck {
  id: string;
  name: string;
  /** A failing critical dependency takes the platform offline; any other only degrades it. */
  critical: boolean;
  /** Resolves when the dependency answers; rejects or times out when it does not. */
  probe(): Promise<HealthStatus>;
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

export class HealthService {
  private readonly checks: HealthCheck[] = [];

  constructor(private readonly timeoutMs = 2_000) {}

  register(check: HealthCheck): void {
    this.checks.push(check);
  }

  async report(): Promise<HealthReport> {
    const gateways = await Promise.all(
      this.checks.map(async (check) => ({
        check,
        result: {
          id: check.id,
          name: check.name,
          status: await this.probe(check),
          lastHealthCheck: Date.now(),
        } satisfies GatewayHealth,
      })),
    );
    const failing = gateways.filter((g) => g.result.status !== 'healthy');
    const status: HealthStatus = failing.some((g) => g.check.critical && g.result.status === 'offline')
      ? 'offline'
      : failing.length > 0
        ? 'degraded'
        : 'healthy';
    return { status, gateways: gateways.map((g) => g.result) };
  }

  private async probe(check: HealthCheck): Promise<HealthStatus> {
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
