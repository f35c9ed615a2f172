import { IsIn, IsOptional } from 'class-validator';
import { PageQueryDto } from '../../common/pagination.js';
import type { ListWorkersQuery } from '../../../contracts/api/workers.js';
import { WORKER_STATES, type WorkerState } from '../worker-state.js';

export class ListWorkersDto extends PageQueryDto implements ListWorkersQuery {
  @IsOptional()
  @IsIn(WORKER_STATES, { message: `status must be one of ${WORKER_STATES.join(', ')}` })
  status?: WorkerState;
}
