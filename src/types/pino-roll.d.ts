declare module 'pino-roll' {
  import type { DestinationStream } from 'pino';

  interface PinoRollOptions {
    file: string | (() => string);
    frequency?: 'daily' | 'hourly' | number;
    size?: string | number;
    mkdir?: boolean;
    extension?: string;
    dateFormat?: string;
    limit?: { count?: number; removeOtherLogFiles?: boolean };
    symlink?: boolean;
  }

  export default function pinoRoll(options: PinoRollOptions): Promise<DestinationStream>;
}
