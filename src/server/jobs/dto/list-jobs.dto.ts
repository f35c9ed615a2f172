import { IsIn, IsOptional, IsUUID } from 'class-validator';
import { PageQueryDto } from '../../common/pagination.js';
import type { ListJobsQuery } from '../../../contracts/api/jobs.js';
import { JOB_STATES, JOB_TYPES, type JobState, type JobType } from '../job-state.js';

export class ListJobsDto extends PageQueryDto implements ListJobsQuery {
  @IsOptional()
  @IsIn(JOB_STATES)
  status?: JobState;

  @IsOptional()
  @IsIn(JOB_TYPES)
  type?: JobType;

  @IsOptional()
  @IsUUID()
  stack_id?: string;

  @IsOptional()
  @IsUUID()
  worker_id?: string;
}
