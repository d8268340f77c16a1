; Inno Setup 6 script for Cairn's Windows installer.
;
; Build the app first (dist\Cairn\ from packaging\cairn.spec), then from the repository root:
;     ISCC.exe /DAppVersion=0.1.0 installer.iss
; packaging\build_windows.ps1 does both, passing the version from pyproject.toml, the only place
; it is written. The installer lands in dist\Cairn-<version>-setup.exe.

#ifndef AppVersion
  #define AppVersion "0.0.0"
#endif
; Windows' binary version resource takes up to four numbers only ("0.2.0rc1" will not do);
; build_windows.ps1 passes the numeric part as FileVersion.
#ifndef FileVersion
  #define FileVersion AppVersion
#endif

#if Ver < EncodeVer(6, 3, 0)
  #error Inno Setup 6.3 or later is needed (for the x64compatible architecture)
#endif

[Setup]
; The AppId identifies Cairn to Windows across versions: upgrades find the previous install by it.
; Never change it.
AppId={{0B3F8188-57E8-42E5-8BE1-5FA14D3C6366}
AppName=Cairn
AppVersion={#AppVersion}
AppVerName=Cairn {#AppVersion}
VersionInfoVersion={#FileVersion}
VersionInfoProductName=Cairn
VersionInfoDescription=Cairn Setup
; Per-user by default: no administrator rights needed, and {autopf} is then
; %LOCALAPPDATA%\Programs. The dialog still offers an all-users install to administrators.
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
; The program folder (%LOCALAPPDATA%\Programs\Cairn) is never the data folder
; (%LOCALAPPDATA%\Cairn): replacing or removing the program never reaches user data.
DefaultDirName={autopf}\Cairn
DefaultGroupName=Cairn
DisableProgramGroupPage=yes
; PyInstaller builds a 64-bit app; Arm64 Windows 11 runs it under emulation.
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=dist
OutputBaseFilename=Cairn-{#AppVersion}-setup
SetupIconFile=resources\icons\cairn.ico
UninstallDisplayIcon={app}\Cairn.exe
UninstallDisplayName=Cairn
WizardStyle=modern
Compression=lzma2/max
SolidCompression=yes
; Ask a running Cairn to close before its files are replaced.
CloseApplications=yes

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[InstallDelete]
; Clean upgrades: drop the previous build's libraries so no stale module from an older Python,
; Qt or dependency lingers next to the new ones. Only the program folder is touched.
Type: filesandordirs; Name: "{app}\_internal"

[Files]
Source: "dist\Cairn\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\Cairn"; Filename: "{app}\Cairn.exe"
Name: "{autodesktop}\Cairn"; Filename: "{app}\Cairn.exe"; Tasks: desktopicon

[Run]
Filename: "{app}\Cairn.exe"; Description: "{cm:LaunchProgram,Cairn}"; Flags: nowait postinstall skipifsilent

; Uninstalling removes only what this installer put in {app}. It must NOT delete the user's data
; folder, %LOCALAPPDATA%\Cairn (cairn.db with workspaces, chats and knowledge; the files\ blob
; store), nor the API key in Windows Credential Manager: user chats and knowledge must never be
; lost, and a reinstall picks them up again. So there is deliberately no [UninstallDelete] here.
