import { IsIn, IsUUID } from 'class-validator';
import { Optional } from '../../common/optional.js';
import { PageQueryDto } from '../../common/pagination.js';
import type { ListJobsQuery } from '../../../contracts/api/jobs.js';
import { JOB_STATES, JOB_TYPES, type JobState, type JobType } from '../job-state.js';

export class ListJobsDto extends PageQueryDto implements ListJobsQuery {
  @Optional()
  @IsIn(JOB_STATES)
  status?: JobState;

  @Optional()
  @IsIn(JOB_TYPES)
  type?: JobType;

  @Optional()
  @IsUUID()
  stack_id?: string;

  @Optional()
  @IsUUID()
  worker_id?: string;
}
