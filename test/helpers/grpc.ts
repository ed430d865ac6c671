import type * as grpc from '@grpc/grpc-js';

/** A unary call from a real gRPC client, as a promise. */
export function unary(client: any, method: string, request: unknown): Promise<any> {
  return new Promise((resolve, reject) => client[method](request, (err: grpc.ServiceError | null, res: any) => (err ? reject(err) : resolve(res))));
}

/** The error a unary call is refused with; throws if it succeeds. */
export async function refusal(client: any, method: string, request: unknown): Promise<grpc.ServiceError> {
  try {
    await unary(client, method, request);
  } catch (err) {
    return err as grpc.ServiceError;
  }
  throw new Error(`${method} succeeded`);
}
