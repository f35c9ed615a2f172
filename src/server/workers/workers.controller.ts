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

@Controller(orchestratorPaths('workers'))
export class WorkersController {
  constructor(
    private readonly workers: WorkersService,
    private readonly enrollment: EnrollmentService,
    private readonly connectivity: ConnectivityService,
  ) {}

  @Get()
  @RequireScopes('orchestrator:read')
  async list(@Caller() caller: Caller, @Query() query: ListWorkersDto): Promise<WorkerList> {
    const page = await this.workers.list(caller, query);
    return { workers: page.items, next_cursor: page.next_cursor };
  }

  /** Agents enroll with a join token instead of an access token. */
  @Post('enroll')
  @Public()
  enroll(@Body() body: EnrollDto, @Headers('host') host?: string): Promise<EnrollmentResult> {
    return this.enrollment.enroll(body, host);
  }

  /** A pending agent polls with its enrollment secret. */
  @Post('enroll/status')
  @Public()
  @HttpCode(200)
  enrollmentStatus(@Body() body: EnrollmentStatusDto): Promise<EnrollmentStatus> {
    return this.enrollment.enrollmentStatus(body);
  }

  /** The latest probe results between the caller's workers. */
  @Get('connectivity')
  @RequireScopes('orchestrator:read')
  connectivityMatrix(@Caller() caller: Caller): Promise<ConnectivityView> {
    return this.connectivity.matrix(caller);
  }

  /** Asks the connected agents to probe each other now; results arrive within seconds. */
  @Post('connectivity/check')
  @RequireScopes('workers:admin')
  @HttpCode(202)
  checkConnectivity(@Caller() caller: Caller): Promise<ConnectivityCheck> {
    return this.connectivity.check(caller);
  }

  @Get(':id')
  @RequireScopes('orchestrator:read')
  get(@Caller() caller: Caller, @Param('id') id: string): Promise<WorkerView> {
    return this.workers.get(caller, id);
  }

  @Post(':id/approve')
  @RequireScopes('workers:admin')
  @HttpCode(200)
  approve(@Caller() caller: Caller, @Param('id') id: string): Promise<WorkerView> {
    return this.workers.approve(caller, id);
  }

  @Delete(':id')
  @RequireScopes('workers:admin')
  @HttpCode(204)
  delete(@Caller() caller: Caller, @Param('id') id: string): Promise<void> {
    return this.workers.delete(caller, id);
  }
}
