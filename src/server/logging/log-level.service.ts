import { Injectable } from '@nestjs/common';
import { PinoLogger } from 'nestjs-pino';
import type { LogLevel } from '../config/config.js';

/** Changes the level of the one root logger every component writes through, effective at once. */
@Injectable()
export class LogLevelService {
  get current(): LogLevel {
    return PinoLogger.root.level as LogLevel;
  }

  apply(level: LogLevel): void {
    PinoLogger.root.level = level;
  }
}
