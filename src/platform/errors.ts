/** An error as one bounded log field: name and message, never a stack or attached objects (which may hold URLs). */
export function describeError(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`.slice(0, 500);
  return String(err).slice(0, 500);
}
