import { ArrayMaxSize, ArrayMinSize, IsArray, IsString, Length, Matches } from 'class-validator';
import type { DriftResourcesRequest } from '../../../contracts/api/drift.js';

export class DriftResourcesDto implements DriftResourcesRequest {
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(200)
  @IsString({ each: true })
  @Length(1, 63, { each: true })
  @Matches(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/, {
    each: true,
    message: 'each resource is a service name (a DNS label)',
  })
  resources: string[];
}
