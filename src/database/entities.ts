import { SettingEntity } from '../settings/entities/setting.entity.js';

/** Every entity of the service; features add theirs here. */
export const ENTITIES = [SettingEntity];
