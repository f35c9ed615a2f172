import pino, { type Logger } from 'pino';

/** The agent's JSON lines: the same record shape as the service's, component `agent`. */
export function agentLogger(level: string): Logger {
  return pino({
    level,
    messageKey: 'msg',
    base: { component: 'agent' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label.toUpperCase() }) },
    redact: {
      paths: ['token', 'enrollment_secret', '*.token', '*.enrollment_secret', 'key', 'keyPem'],
      censor: '[REDACTED]',
    },
  });
}
