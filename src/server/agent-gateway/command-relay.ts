import { Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import pg from 'pg';
import { DataSource } from 'typeorm';
import type { ServerMessage } from '../../contracts/agent-protocol/index.js';
import { every } from '../common/periodic.js';
import { AppConfig } from '../config/config.js';
import { AgentSessions } from './agent-sessions.js';
import { SessionDirectory } from './session-directory.js';

/** The channel replicas LISTEN on; a notification means "look at agent_commands". */
export const COMMANDS_CHANNEL = 'agent_commands';
/** Every replica looks this often even without a notification (a lost one only delays). */
const POLL_MS = 1_000;
/** A command nobody took within this long (its agent went away) is dropped. */
const COMMAND_TTL_MS = 60_000;
/** Commands taken per look. */
const TAKE = 500;

interface CommandRow {
  id: string;
  worker_id: string;
  message: ServerMessage;
}

/**
 * Gets a command to an agent whichever replica holds its stream: sent at once when this replica
 * holds it; else written to `agent_commands` with a NOTIFY, and the holding replica (woken by the
 * notification, or by its poll every second) takes its agents' commands in order and sends them.
 * On the embedded database there is one replica and no LISTEN; the poll still runs.
 */
@Injectable()
export class CommandRelay implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('agent-gateway');
  private timer: NodeJS.Timeout | undefined;
  private listener: pg.Client | undefined;
  private taking = false;
  private again = false;
  private stopped = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly sessions: AgentSessions,
    private readonly directory: SessionDirectory,
    private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.timer = every(this.logger, 'agent-commands', POLL_MS, async () => {
      if (this.config.databaseUrl !== undefined && this.listener === undefined) await this.listen();
      await this.take();
    });
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    const listener = this.listener;
    this.listener = undefined;
    await listener?.end().catch(() => undefined);
  }

  /**
   * Sends `message` to the worker's agent wherever its stream is; false when no replica holds one
   * (the command is not kept for a later connection).
   */
  async deliver(workerId: string, message: ServerMessage): Promise<boolean> {
    if (this.sessions.send(workerId, message)) return true;
    if (!this.directory.isConnected(workerId)) return false;
    await this.dataSource.query(
      `WITH queued AS (INSERT INTO agent_commands (worker_id, message) VALUES ($1, $2) RETURNING id)
       SELECT pg_notify($3, '') FROM queued`,
      [workerId, JSON.stringify(message), COMMANDS_CHANNEL],
    );
    return true;
  }

  /** Takes this replica's agents' commands and sends them, oldest first; drops expired ones. */
  async take(): Promise<void> {
    if (this.taking) {
      this.again = true;
      return;
    }
    this.taking = true;
    try {
      do {
        this.again = false;
        await this.dataSource.query(
          `DELETE FROM agent_commands WHERE created_at < now() - $1 * interval '1 millisecond'`,
          [COMMAND_TTL_MS],
        );
        const mine = this.sessions.connectedIds();
        if (mine.length === 0) continue;
        // TypeORM answers a DELETE ... RETURNING as [rows, count].
        const [rows] = await this.dataSource.query<[CommandRow[], number]>(
          `DELETE FROM agent_commands WHERE id IN (
             SELECT id FROM agent_commands WHERE worker_id = ANY($1::uuid[])
              ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
           RETURNING id, worker_id, message`,
          [mine, TAKE],
        );
        rows.sort((a, b) => Number(a.id) - Number(b.id));
        for (const row of rows)
          if (!this.sessions.send(row.worker_id, row.message))
            this.logger.warn({ worker_id: row.worker_id }, 'relayed command dropped: the agent went away');
        if (rows.length === TAKE) this.again = true;
      } while (this.again && !this.stopped);
    } finally {
      this.taking = false;
    }
  }

  /** A connection of its own that LISTENs; when it fails, the next poll opens another. */
  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.config.databaseUrl });
    client.on('notification', () => {
      void this.take().catch((err: unknown) => this.logger.warn({ err }, 'relayed commands not taken'));
    });
    client.on('error', (err) => {
      this.logger.warn({ err }, 'command notifications lost; polling until reconnected');
      if (this.listener === client) this.listener = undefined;
      void client.end().catch(() => undefined);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${COMMANDS_CHANNEL}`);
      if (this.stopped) await client.end();
      else this.listener = client;
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
  }
}
