# Build dist\Cairn\ with PyInstaller, then dist\Cairn-<version>-setup.exe with Inno Setup 6.
#
#   powershell -ExecutionPolicy Bypass -File packaging\build_windows.ps1
#
# Needs uv and Inno Setup 6.3+ (winget install JRSoftware.InnoSetup). Set CAIRN_ISCC to the full
# path of ISCC.exe if it is not on PATH or in a standard install location, and CAIRN_BUILD_PYTHON
# to bundle a Python other than 3.12.
#
# Signing: set CAIRN_SIGNTOOL to a signtool command line without the file, e.g.
#   signtool sign /fd sha256 /tr http://timestamp.digicert.com /td sha256 /sha1 <certificate thumbprint>
# (no quotes inside: the same line goes to cmd.exe and, through /S, to ISCC).
# Cairn.exe and cairn.com are signed before ISCC packs them; ISCC then signs Setup and the
# uninstaller with the same command (installer.iss: SignTool=cairn).

# Stop at the first failing cmdlet; native programs are checked through $LASTEXITCODE below.
$ErrorActionPreference = 'Stop'
Set-StrictMode -Version Latest

# Work from the repository root whatever the caller's directory: the spec and installer.iss
# use paths relative to it.
$Root = Split-Path -Parent $PSScriptRoot
Set-Location $Root

function Invoke-Native {
    param([string] $Program, [string[]] $Arguments)
    # uv and PyInstaller log to stderr; under 'Stop' Windows PowerShell 5.1 can turn such a line
    # into a terminating error, so here success is judged by the exit code alone.
    $ErrorActionPreference = 'Continue'
    & $Program @Arguments
    if ($LASTEXITCODE -ne 0) { throw "$Program exited with code $LASTEXITCODE" }
}

# Installers ship Python 3.12 (DESIGN.md section 2) while development may run 3.11, so the build has its
# own environment and leaves the developer's .venv alone: exactly what uv.lock pins without the
# dev group (--locked fails on a stale lock; sync removes anything else), plus the pinned
# PyInstaller of packaging\build-requirements.txt.
if (-not $env:UV_PROJECT_ENVIRONMENT) { $env:UV_PROJECT_ENVIRONMENT = 'build\venv' }
$Python = if ($env:CAIRN_BUILD_PYTHON) { $env:CAIRN_BUILD_PYTHON } else { '3.12' }
Invoke-Native 'uv' @('sync', '--locked', '--no-dev', '--python', $Python)
Invoke-Native 'uv' @('pip', 'install', '--python', $env:UV_PROJECT_ENVIRONMENT, '--require-hashes',
                     '-r', 'packaging\build-requirements.txt')
$UvRun = @('run', '--no-sync')

# pyproject.toml is the only place the version is written.
$ReadVersion = "import tomllib; print(tomllib.load(open('pyproject.toml', 'rb'))['project']['version'])"
$Version = "$(Invoke-Native 'uv' ($UvRun + @('python', '-c', $ReadVersion)))".Trim()
if (-not $Version) { throw 'could not read the version from pyproject.toml' }
# Windows' binary version resource takes numbers only: 0.2.0rc1 -> 0.2.0.
$FileVersion = [regex]::Match($Version, '^\d+(\.\d+){0,3}').Value

Write-Host "==> Building Cairn $Version"
Invoke-Native 'uv' ($UvRun + @('pyinstaller', '--noconfirm', '--clean', 'packaging\cairn.spec'))

# The bundle must say the version it was built from: the console entry answers on stdout.
$Said = "$(Invoke-Native '.\dist\Cairn\cairn.com' @('--version'))".Trim()
if ($Said -ne "Cairn $Version") { throw "dist\Cairn\cairn.com --version said '$Said', not 'Cairn $Version'" }

$SignArgs = @()
if ($env:CAIRN_SIGNTOOL) {
    Write-Host '==> Signing Cairn.exe and cairn.com'
    foreach ($Exe in @('dist\Cairn\Cairn.exe', 'dist\Cairn\cairn.com')) {
        Invoke-Native 'cmd.exe' @('/c', "$env:CAIRN_SIGNTOOL `"$Exe`"")
    }
    # ISCC replaces $f with the quoted file name; it signs Setup and the uninstaller.
    $SignArgs = @('/DSign', "/Scairn=$env:CAIRN_SIGNTOOL `$f")
}

$Iscc = $env:CAIRN_ISCC
if (-not $Iscc) {
    $OnPath = Get-Command 'ISCC.exe' -ErrorAction SilentlyContinue
    $Candidates = @(
        $(if ($OnPath) { $OnPath.Source }),
        (Join-Path ${env:ProgramFiles(x86)} 'Inno Setup 6\ISCC.exe'),
        (Join-Path $env:ProgramFiles 'Inno Setup 6\ISCC.exe'),
        (Join-Path $env:LOCALAPPDATA 'Programs\Inno Setup 6\ISCC.exe')  # winget's per-user install
    ) | Where-Object { $_ -and (Test-Path $_) }
    $Iscc = $Candidates | Select-Object -First 1
}
if (-not $Iscc) { throw 'ISCC.exe not found: install Inno Setup 6 or set CAIRN_ISCC' }

Write-Host "==> Making the installer with $Iscc"
Invoke-Native $Iscc (@("/DAppVersion=$Version", "/DFileVersion=$FileVersion") + $SignArgs + @('installer.iss'))

Write-Host "==> Done: dist\Cairn-$Version-setup.exe"
