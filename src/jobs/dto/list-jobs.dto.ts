import { IsIn, IsOptional, IsUUID } from 'class-validator';
import { PageQueryDto } from '../../common/pagination.js';
import { JOB_STATES, JOB_TYPES, type JobState, type JobType } from '../job-state.js';

export class ListJobsDto extends PageQueryDto {
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
