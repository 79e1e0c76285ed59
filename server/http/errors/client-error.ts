import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { newTraceId, TRACE_HEADER } from '../trace.js';

/**
 * Requests Node rejects before Express sees them (a garbled request line, oversized headers)
 * still get a JSON body with a trace id.
 */
export function answerClientErrors(server: Server, logger: Logger): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    // As Node itself does: answer unless a response has already begun on this socket.
    const response = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (!socket.writable || response?.headersSent) {
      socket.destroy();
      return;
    }
    const traceId = newTraceId();
    const [status, reason] = error.code === 'HPE_HEADER_OVERFLOW' ? [431, 'Request Header Fields Too Large'] : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'Request Timeout'] : [400, 'Bad Request'];
    const body = JSON.stringify({ error: reason, code: status === 408 ? 'request_timeout' : 'bad_request', trace_id: traceId });
    logger.info({ traceId, code: error.code, status }, 'rejected a malformed request');
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${TRACE_HEADER}: ${traceId}\r\n` +
        `X-Should-Retry: ${status === 408}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
