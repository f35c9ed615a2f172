# Installs and starts stack-agent, the stack-orchestrator's worker agent, on Windows. Served by the
# orchestrator at /install.ps1; the one-line command from POST /api/v1/tunnel/install-command runs
# it as a script block with -Server, -Token, -Sha256, -CaFingerprint and, when the service names
# several agent endpoints (AGENT_ENDPOINTS), -AgentEndpoint.
#
# It downloads the agent (one file) from <Server>/downloads/stack-agent.mjs, checks its SHA-256,
# keeps the join token in a file only the current user can read, and starts the agent in the
# background with its output in log files under %LOCALAPPDATA%\stack-agent. -AgentArgs go to the
# agent unchanged (stack-agent --help). Everything is in one script block, so a download cut short
# runs nothing.
param(
  [Parameter(Mandatory = $true)][string]$Server,
  [Parameter(Mandatory = $true)][string]$Token,
  [Parameter(Mandatory = $true)][string]$Sha256,
  [string]$CaFingerprint = '',
  [string]$AgentEndpoint = '',
  [string[]]$AgentArgs = @()
)

$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

# One argument on a Windows command line (the rules CommandLineToArgvW and Node.js read it by):
# in double quotes, a quote escaped with a backslash, backslashes doubled before a quote or the end.
function ConvertTo-Argument([string]$Value) {
  '"' + (($Value -replace '(\\*)"', '$1$1\"') -replace '(\\+)$', '$1$1') + '"'
}

if ($Server -notmatch '^https?://') { throw "-Server must be an http:// or https:// URL, not $Server" }
$Server = $Server.TrimEnd('/')
if ($Sha256 -cnotmatch '^[0-9a-f]{64}$') { throw '-Sha256 wants the 64 lower-case hex digits of the agent download' }
if (-not $Token) { throw '-Token (the join token) is required' }

$node = Get-Command node -CommandType Application -ErrorAction SilentlyContinue | Select-Object -First 1
if (-not $node) { throw 'Node.js 20 or newer is needed on the PATH (https://nodejs.org)' }
$major = [int](& $node.Source -p 'process.versions.node.split(".")[0]')
if ($major -lt 20) { throw "Node.js 20 or newer is needed; $($node.Source) is $(& $node.Source --version)" }

$dir = Join-Path $env:LOCALAPPDATA 'stack-agent'
$data = Join-Path $dir 'data'
$bundle = Join-Path $dir 'stack-agent.mjs'
$tokenFile = Join-Path $dir 'join-token'
$pidFile = Join-Path $dir 'agent.pid'
$log = Join-Path $dir 'agent.log'
$errorLog = Join-Path $dir 'agent.err.log'
New-Item -ItemType Directory -Force -Path $data | Out-Null

Write-Host "downloading $Server/downloads/stack-agent.mjs"
Invoke-WebRequest -UseBasicParsing -Uri "$Server/downloads/stack-agent.mjs" -OutFile "$bundle.new"
$actual = (Get-FileHash -Algorithm SHA256 -LiteralPath "$bundle.new").Hash.ToLowerInvariant()
if ($actual -ne $Sha256) {
  Remove-Item -Force -LiteralPath "$bundle.new"
  throw "the download's SHA-256 is $actual, not ${Sha256}: nothing was installed"
}

if (Test-Path -LiteralPath $pidFile) {
  $old = Get-Process -Id ([int](Get-Content -LiteralPath $pidFile -Raw)) -ErrorAction SilentlyContinue
  if ($old -and $old.ProcessName -eq 'node') {
    Write-Host "stopping the running agent (pid $($old.Id))"
    Stop-Process -Id $old.Id -Force
    $old.WaitForExit(10000) | Out-Null
  }
}
Move-Item -Force -LiteralPath "$bundle.new" -Destination $bundle

# The token file: readable by the current user only, inheriting nothing.
Set-Content -LiteralPath $tokenFile -Value $Token -NoNewline -Encoding ascii
$acl = New-Object System.Security.AccessControl.FileSecurity
$acl.SetAccessRuleProtection($true, $false)
$me = [System.Security.Principal.WindowsIdentity]::GetCurrent().User
$acl.AddAccessRule((New-Object System.Security.AccessControl.FileSystemAccessRule($me, 'FullControl', 'Allow')))
Set-Acl -LiteralPath $tokenFile -AclObject $acl

$argv = @($bundle, '--server', $Server, '--token-file', $tokenFile, '--data-dir', $data)
if ($CaFingerprint) { $argv += @('--ca-fingerprint', $CaFingerprint) }
if ($AgentEndpoint) { $argv += @('--agent-endpoint', $AgentEndpoint) }
$argv += $AgentArgs
$commandLine = ($argv | ForEach-Object { ConvertTo-Argument $_ }) -join ' '
$agent = Start-Process -FilePath $node.Source -ArgumentList $commandLine -WindowStyle Hidden -PassThru `
  -RedirectStandardOutput $log -RedirectStandardError $errorLog
Set-Content -LiteralPath $pidFile -Value $agent.Id

# An agent that cannot start (bad option, refused token) says so within moments.
Start-Sleep -Seconds 2
if ($agent.HasExited) {
  Get-Content -LiteralPath $errorLog -Tail 20 -ErrorAction SilentlyContinue | Write-Host
  throw "the agent stopped right after it started (exit code $($agent.ExitCode)); its logs are $log and $errorLog"
}
Write-Host "stack-agent installed in $dir and running in the background (pid $($agent.Id))"
Write-Host "  logs: $log, $errorLog"
Write-Host "  stop: Stop-Process -Id (Get-Content '$pidFile')"
