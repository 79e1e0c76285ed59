import type { OperationId } from '../../generated/server/operations.js';
import { ApiError } from '../errors.js';

const stubs = new Set<OperationId>();

/** A scaffolded handler: answers 501 in the operation's error shape until someone implements it. */
export function notImplemented(operationId: OperationId) {
  stubs.add(operationId);
  return async (): Promise<never> => {
    throw new ApiError('NOT_IMPLEMENTED', `${operationId} is not implemented yet`);
  };
}

/** Operations still answered by a stub (logged at boot). */
export function stubbedOperations(): OperationId[] {
  return [...stubs].sort();
}
