import { IsBoolean, IsOptional, IsString, MaxLength } from 'class-validator';

export class ValidateUrlDto {
  /** The URL to check; absent means "check what is stored" is not offered: validation says so. */
  @IsOptional()
  @IsString()
  @MaxLength(2048)
  url?: string;

  /** false: only check. By default a valid, reachable URL becomes the custom public URL. */
  @IsOptional()
  @IsBoolean()
  save?: boolean;
}
