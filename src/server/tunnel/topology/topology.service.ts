import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/config.js';
import type { Topology } from '../../../contracts/api/tunnel.js';
import { TopologyDetector } from './topology.js';

/** The detector with this instance's STUN servers and platform hints; cached for a minute. */
@Injectable()
export class TopologyService {
  private readonly detector: TopologyDetector;

  constructor(config: AppConfig) {
    this.detector = new TopologyDetector({
      stunServers: config.tunnel.stunServers,
      env: config.platformHints,
    });
  }

  detect(): Promise<Topology> {
    return this.detector.detect();
  }
}
