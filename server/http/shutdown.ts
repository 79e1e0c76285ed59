import type { Server } from 'node:http';

/**
 * Stops accepting connections, lets in-flight requests finish, and after `timeoutMs`
 * cuts whatever is still open (long streams) so the process can exit.
 */
export function closeGracefully(server: Server, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => server.closeAllConnections(), timeoutMs);
    timer.unref();
    server.close((error) => {
      clearTimeout(timer);
      if (error && (error as NodeJS.ErrnoException).code !== 'ERR_SERVER_NOT_RUNNING') reject(error);
      else resolve();
    });
    server.closeIdleConnections();
  });
}
