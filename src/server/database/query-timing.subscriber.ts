import { EventSubscriber, type AfterQueryEvent, type EntitySubscriberInterface } from 'typeorm';
import { RequestContext } from '../common/request-context.js';

/** Adds every statement's execution time to the request it ran for: request records carry it. */
@EventSubscriber()
export class QueryTimingSubscriber implements EntitySubscriberInterface {
  afterQuery(event: AfterQueryEvent): void {
    RequestContext.recordQuery(event.executionTime ?? 0);
  }
}
