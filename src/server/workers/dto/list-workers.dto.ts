import { IsIn } from 'class-validator';
import { Optional } from '../../common/optional.js';
import { PageQueryDto } from '../../common/pagination.js';
import type { ListWorkersQuery } from '../../../contracts/api/workers.js';
import { WORKER_STATES, type WorkerState } from '../worker-state.js';

export class ListWorkersDto extends PageQueryDto implements ListWorkersQuery {
  @Optional()
  @IsIn(WORKER_STATES, { message: `status must be one of ${WORKER_STATES.join(', ')}` })
  status?: WorkerState;
}
