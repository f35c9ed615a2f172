import { Injectable } from '@nestjs/common';
import { DataSource, Repository } from 'typeorm';
import { SettingEntity } from './entities/setting.entity.js';

export interface StoredSetting<T> {
  value: T;
  updatedAt: Date;
}

@Injectable()
export class SettingsRepository {
  private readonly repo: Repository<SettingEntity>;

  constructor(dataSource: DataSource) {
    this.repo = dataSource.getRepository(SettingEntity);
  }

  async get<T>(key: string): Promise<StoredSetting<T> | undefined> {
    const row = await this.repo.findOneBy({ key });
    return row ? { value: row.value as T, updatedAt: row.updatedAt } : undefined;
  }

  /** Writes the value and returns it with the database's timestamp. */
  async put<T>(key: string, value: T): Promise<StoredSetting<T>> {
    const rows = await this.repo.query<{ updated_at: Date }[]>(
      `INSERT INTO settings (key, value, updated_at) VALUES ($1, $2::jsonb, now())
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at
       RETURNING updated_at`,
      [key, JSON.stringify(value)],
    );
    return { value, updatedAt: rows[0].updated_at };
  }
}
