import { Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Caller, RequireScopes } from '../auth/auth.decorators.js';
import { orchestratorPaths } from '../common/paths.js';
import { JobLogsDto } from './dto/job-logs.dto.js';
import { ListJobsDto } from './dto/list-jobs.dto.js';
import type { JobCleanup, JobList, JobLogPage, JobView } from '../../contracts/api/jobs.js';
import { JobsService } from './jobs.service.js';
import { ApiDoc, jsonAnswer } from '../openapi/api-doc.js';

@Controller(orchestratorPaths('jobs'))
export class JobsController {
  constructor(private readonly jobs: JobsService) {}

  @Get()
  @RequireScopes('orchestrator:read')
  @ApiDoc({
    summary: 'List jobs, newest first',
    tag: 'Jobs',
    query: 'ListJobsQuery',
    responses: { 200: 'JobList' },
  })
  async list(@Caller() caller: Caller, @Query() query: ListJobsDto): Promise<JobList> {
    const page = await this.jobs.list(caller, query);
    return { jobs: page.items, next_cursor: page.next_cursor };
  }

  @Get(':id')
  @RequireScopes('orchestrator:read')
  @ApiDoc({ summary: 'Read a job', tag: 'Jobs', responses: { 200: 'JobView' } })
  get(@Caller() caller: Caller, @Param('id') id: string): Promise<JobView> {
    return this.jobs.get(caller, id);
  }

  /** The job's output lines, oldest first; page with `after=<next_after>`. */
  @Get(':id/logs')
  @RequireScopes('orchestrator:read')
  @ApiDoc({
    summary: "A job's output lines, oldest first",
    tag: 'Jobs',
    query: 'JobLogsQuery',
    responses: { 200: 'JobLogPage' },
  })
  logs(@Caller() caller: Caller, @Param('id') id: string, @Query() query: JobLogsDto): Promise<JobLogPage> {
    return this.jobs.logs(caller, id, query.after, query.limit);
  }

  /** 200 when a queued job was cancelled; 202 while a dispatched or running one is cancelling. */
  @Post(':id/cancel')
  @RequireScopes('orchestrator:write')
  @ApiDoc({
    summary: 'Cancel a job',
    tag: 'Jobs',
    responses: {
      200: jsonAnswer('JobView', 'A queued job was cancelled.'),
      202: jsonAnswer('JobView', 'A dispatched or running job is cancelling.'),
    },
    problems: { 409: 'The job has ended; there is nothing to cancel (`conflict`).' },
  })
  async cancel(
    @Caller() caller: Caller,
    @Param('id') id: string,
    @Res({ passthrough: true }) res: Response,
  ): Promise<JobView> {
    const { status, job } = await this.jobs.cancel(caller, id);
    res.status(status);
    return job;
  }

  @Post(':id/cleanup')
  @RequireScopes('orchestrator:write')
  @ApiDoc({
    summary: 'Clean up after a failed or stuck job',
    tag: 'Jobs',
    responses: { 200: 'JobCleanup' },
    problems: { 409: 'The job succeeded; there is nothing to clean up (`conflict`).' },
  })
  @HttpCode(200)
  cleanup(@Caller() caller: Caller, @Param('id') id: string): Promise<JobCleanup> {
    return this.jobs.cleanup(caller, id);
  }
}
