/** A long-running part of a process (ingest, deliver). Processes compose the roles their config enables. */
export interface Role {
  readonly name: string;
  start(): Promise<void>;
  /** Stop taking new work and finish or release in-flight work. */
  stop(): Promise<void>;
  isRunning(): boolean;
  /** Named checks for readiness beyond "running" (e.g. a source that stopped advancing); 'ok' when healthy. */
  health?(): Record<string, string>;
}

/** A role that cannot run with this config; the message says which key to change. */
export class RoleConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RoleConfigError';
  }
}
