import { Body, Controller, Delete, Get, Headers, HttpCode, Param, Post, Query } from '@nestjs/common';
import { Caller, Public, RequireScopes } from '../auth/auth.decorators.js';
import { orchestratorPaths } from '../common/paths.js';
import type {
  ConnectivityCheck,
  ConnectivityView,
  EnrollmentResult,
  EnrollmentStatus,
  WorkerList,
  WorkerView,
} from '../../contracts/api/workers.js';
import { ConnectivityService } from './connectivity.service.js';
import { EnrollDto, EnrollmentStatusDto } from './dto/enroll.dto.js';
import { ListWorkersDto } from './dto/list-workers.dto.js';
import { WorkersService } from './workers.service.js';
import { EnrollmentService } from './enrollment.service.js';
import { ApiDoc } from '../openapi/api-doc.js';

@Controller(orchestratorPaths('workers'))
export class WorkersController {
  constructor(
    private readonly workers: WorkersService,
    private readonly enrollment: EnrollmentService,
    private readonly connectivity: ConnectivityService,
  ) {}

  @Get()
  @RequireScopes('orchestrator:read')
  @ApiDoc({
    summary: 'List workers',
    tag: 'Workers',
    query: 'ListWorkersQuery',
    responses: { 200: 'WorkerList' },
  })
  async list(@Caller() caller: Caller, @Query() query: ListWorkersDto): Promise<WorkerList> {
    const page = await this.workers.list(caller, query);
    return { workers: page.items, next_cursor: page.next_cursor };
  }

  /** Agents enroll with a join token instead of an access token. */
  @Post('enroll')
  @Public()
  @ApiDoc({
    summary: 'Enroll an agent with a join token',
    description: 'For agents: the join token replaces the access token.',
    tag: 'Workers',
    body: 'EnrollRequest',
    responses: { 201: 'EnrollmentResult' },
    problems: {
      401: 'The join token is invalid, expired or revoked (`unauthorized`).',
      429: 'Too many failed enrollment attempts from this address (`rate_limited`); see `Retry-After`.',
      503: 'The database cannot be reached, or the agent CA is not ready (`unavailable`).',
    },
  })
  enroll(@Body() body: EnrollDto, @Headers('host') host?: string): Promise<EnrollmentResult> {
    return this.enrollment.enroll(body, host);
  }

  /** A pending agent polls with its enrollment secret. */
  @Post('enroll/status')
  @Public()
  @ApiDoc({
    summary: 'A pending agent asks whether it was approved',
    tag: 'Workers',
    body: 'EnrollmentStatusRequest',
    responses: { 200: 'EnrollmentStatus' },
    problems: {
      401: 'Unknown worker or wrong enrollment secret (`unauthorized`).',
      429: 'Too many failed attempts from this address (`rate_limited`); see `Retry-After`.',
      503: 'The database cannot be reached (`unavailable`).',
    },
  })
  @HttpCode(200)
  enrollmentStatus(@Body() body: EnrollmentStatusDto): Promise<EnrollmentStatus> {
    return this.enrollment.enrollmentStatus(body);
  }

  /** The latest probe results between the caller's workers. */
  @Get('connectivity')
  @RequireScopes('orchestrator:read')
  @ApiDoc({
    summary: "The latest probe results between the caller's workers",
    tag: 'Workers',
    responses: { 200: 'ConnectivityView' },
  })
  connectivityMatrix(@Caller() caller: Caller): Promise<ConnectivityView> {
    return this.connectivity.matrix(caller);
  }

  /** Asks the connected agents to probe each other now; results arrive within seconds. */
  @Post('connectivity/check')
  @RequireScopes('workers:admin')
  @ApiDoc({
    summary: 'Ask the connected agents to probe each other now',
    tag: 'Workers',
    responses: { 202: 'ConnectivityCheck' },
  })
  @HttpCode(202)
  checkConnectivity(@Caller() caller: Caller): Promise<ConnectivityCheck> {
    return this.connectivity.check(caller);
  }

  @Get(':id')
  @RequireScopes('orchestrator:read')
  @ApiDoc({ summary: 'Read a worker', tag: 'Workers', responses: { 200: 'WorkerView' } })
  get(@Caller() caller: Caller, @Param('id') id: string): Promise<WorkerView> {
    return this.workers.get(caller, id);
  }

  @Post(':id/approve')
  @RequireScopes('workers:admin')
  @ApiDoc({
    summary: 'Approve a pending worker',
    tag: 'Workers',
    responses: { 200: 'WorkerView' },
    problems: { 409: 'The worker is not pending approval (`conflict`).' },
  })
  @HttpCode(200)
  approve(@Caller() caller: Caller, @Param('id') id: string): Promise<WorkerView> {
    return this.workers.approve(caller, id);
  }

  @Delete(':id')
  @RequireScopes('workers:admin')
  @ApiDoc({
    summary: 'Delete a worker',
    description: 'Its agent is disconnected and its certificate no longer accepted.',
    tag: 'Workers',
    responses: { 204: null },
  })
  @HttpCode(204)
  delete(@Caller() caller: Caller, @Param('id') id: string): Promise<void> {
    return this.workers.delete(caller, id);
  }
}
