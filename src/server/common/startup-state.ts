import { Injectable } from '@nestjs/common';

/** What /health/startup reports: migrations applied and every listener the service runs is up. */
@Injectable()
export class StartupState {
  /** When this service instance started; uptime is measured from here. */
  readonly startedAt = new Date();
  private migrated = false;
  private readonly expected = new Set<string>(['http']);
  private readonly listening = new Set<string>();

  markMigrated(): void {
    this.migrated = true;
  }

  /** A feature that runs its own listener (the agent gateway) registers it before start-up ends. */
  expectListener(name: string): void {
    this.expected.add(name);
  }

  markListening(name: string): void {
    this.listening.add(name);
  }

  status(): { migrations: boolean; listeners: Record<string, boolean>; started: boolean } {
    const listeners = Object.fromEntries([...this.expected].map((name) => [name, this.listening.has(name)]));
    const started = this.migrated && Object.values(listeners).every(Boolean);
    return { migrations: this.migrated, listeners, started };
  }
}
