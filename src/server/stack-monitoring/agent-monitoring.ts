import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import type { ScrapeReportMsg, ServiceOutputMsg } from '../../contracts/agent-protocol/index.js';
import { MAX_OUTPUT_LINES_PER_MESSAGE } from '../../contracts/agent-protocol/limits.js';
import { AgentSessions, type AgentMonitoringHandler } from '../agent-gateway/agent-sessions.js';
import { isUuid } from '../common/ids.js';
import { DNS_LABEL } from '../stacks/definition/service-fields.js';
import { ServiceMetricsRecorder } from './service-metrics.js';
import { StackLogWriter } from './stack-log-writer.js';
import { StackTargets } from './stack-targets.js';

/**
 * Where the agents' scrapes and service output go: a scrape of a stack placed on the sending
 * worker into the metric store under the stack's owner, output lines into the stack's log. What
 * names another worker's stack, or is malformed, is dropped (an agent speaks for its own node only).
 */
@Injectable()
export class AgentMonitoring implements AgentMonitoringHandler, OnModuleInit {
  private readonly logger = new Logger('stack-monitoring');

  constructor(
    private readonly sessions: AgentSessions,
    private readonly targets: StackTargets,
    private readonly metrics: ServiceMetricsRecorder,
    private readonly logs: StackLogWriter,
  ) {}

  onModuleInit(): void {
    this.sessions.setMonitoringHandler(this);
  }

  scrape(workerId: string, report: ScrapeReportMsg): void {
    if (!isUuid(report.stack_id) || !DNS_LABEL.test(report.service)) return;
    void this.targets
      .of(report.stack_id, workerId)
      .then((stack) => {
        if (stack === null) {
          this.logger.debug(
            { worker_id: workerId, stack_id: report.stack_id },
            'scrape of a stack not placed there dropped',
          );
          return;
        }
        this.metrics.record(stack, workerId, report);
      })
      .catch((err: unknown) => this.logger.warn({ err, worker_id: workerId }, 'scrape not recorded'));
  }

  output(workerId: string, output: ServiceOutputMsg): void {
    // The stacks a line names are checked as it is stored (stack_logs joins stacks on the worker).
    this.logs.add(workerId, output.lines.slice(0, MAX_OUTPUT_LINES_PER_MESSAGE));
  }
}
