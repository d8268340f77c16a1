; Inno Setup 6 script for Cairn's Windows installer.
;
; Build the app first (dist\Cairn\ from packaging\cairn.spec), then from the repository root:
;     ISCC.exe /DAppVersion=0.1.0 installer.iss
; packaging\build_windows.ps1 does both, passing the version from pyproject.toml, the only place
; it is written; packaging/check_installer.sh compiles this script on Linux under wine.
; The installer lands in dist\Cairn-<version>-setup.exe.
;
; Signing: with /DSign and a sign tool named "cairn" defined on the command line
; (ISCC "/Scairn=signtool sign ... $f" /DSign ...), Setup and its uninstaller are signed too;
; build_windows.ps1 does this when CAIRN_SIGNTOOL is set, after signing the exes it packs.

#ifndef AppVersion
  #error Pass the version from pyproject.toml: ISCC /DAppVersion=X.Y.Z installer.iss (build_windows.ps1 does)
#endif
; Windows' binary version resource takes up to four numbers only ("0.2.0rc1" will not do);
; build_windows.ps1 passes the numeric part as FileVersion.
#ifndef FileVersion
  #define FileVersion AppVersion
#endif
; Who ships Cairn: shown in Apps & features and in the exe's properties (packaging/cairn.spec
; writes the same into Cairn.exe).
#define AppPublisher "Cairn"
#define AppURL "https://cairn.app"
#define AppCopyright "Copyright (C) 2026 Cairn"

; packaging/check_installer.sh compiles against a staged copy of the bundle, faster.
#ifndef BundleDir
  #define BundleDir "dist\Cairn"
#endif
#ifndef Compression
  #define Compression "lzma2/max"
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
VersionInfoCompany={#AppPublisher}
VersionInfoCopyright={#AppCopyright}
AppPublisher={#AppPublisher}
AppPublisherURL={#AppURL}
AppSupportURL={#AppURL}
AppUpdatesURL={#AppURL}
AppCopyright={#AppCopyright}
; Qt 6 supports Windows 10 1809 (build 17763) and later.
MinVersion=10.0.17763
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
Compression={#Compression}
SolidCompression=yes
; Ask a running Cairn to close before its files are replaced.
CloseApplications=yes
; The "Add Cairn to PATH" task changes Path: tell Explorer (and new terminals) at the end, and
; again when the uninstaller takes the entry out.
ChangesEnvironment=yes
; The .cairn file type is registered: Explorer refreshes its icons and Open With at the end.
ChangesAssociations=yes
#ifdef Sign
; The "cairn" sign tool comes from the command line (/Scairn=...): Setup and the uninstaller
; it writes are signed with it.
SignTool=cairn
#endif

[Languages]
Name: "english"; MessagesFile: "compiler:Default.isl"

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked
; `cairn` in a terminal: the folder holds cairn.com, the console entry (PATHEXT finds .COM first).
Name: "addtopath"; Description: "Add Cairn to PATH (the ""cairn"" command in a terminal)"; GroupDescription: "Command line:"
; Explorer's menu on a folder and on a folder's background: the folder opens as a workspace,
; in the running window when there is one (the hand-over of `cairn PATH`).
Name: "contextmenu"; Description: "Add ""Open in Cairn"" to the menu of folders in Explorer"; GroupDescription: "Explorer:"; Flags: unchecked

[InstallDelete]
; Clean upgrades: drop the previous build's libraries so no stale module from an older Python,
; Qt or dependency lingers next to the new ones. Only the program folder is touched.
Type: filesandordirs; Name: "{app}\_internal"

[Files]
Source: "{#BundleDir}\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{autoprograms}\Cairn"; Filename: "{app}\Cairn.exe"
Name: "{autodesktop}\Cairn"; Filename: "{app}\Cairn.exe"; Tasks: desktopicon

[Registry]
; HKA is HKCU\Software\Classes in a per-user install, HKLM\Software\Classes for all users.
Root: HKA; Subkey: "Software\Classes\Directory\shell\Cairn"; ValueType: string; ValueName: ""; ValueData: "Open in Cairn"; Flags: uninsdeletekey; Tasks: contextmenu
Root: HKA; Subkey: "Software\Classes\Directory\shell\Cairn"; ValueType: string; ValueName: "Icon"; ValueData: """{app}\Cairn.exe"",0"; Tasks: contextmenu
Root: HKA; Subkey: "Software\Classes\Directory\shell\Cairn\command"; ValueType: string; ValueName: ""; ValueData: """{app}\Cairn.exe"" open ""%1"""; Tasks: contextmenu
Root: HKA; Subkey: "Software\Classes\Directory\Background\shell\Cairn"; ValueType: string; ValueName: ""; ValueData: "Open in Cairn"; Flags: uninsdeletekey; Tasks: contextmenu
Root: HKA; Subkey: "Software\Classes\Directory\Background\shell\Cairn"; ValueType: string; ValueName: "Icon"; ValueData: """{app}\Cairn.exe"",0"; Tasks: contextmenu
; %V\. rather than %V: for a drive's root %V ends in a backslash, and \" would escape the quote.
Root: HKA; Subkey: "Software\Classes\Directory\Background\shell\Cairn\command"; ValueType: string; ValueName: ""; ValueData: """{app}\Cairn.exe"" open ""%V\."""; Tasks: contextmenu
; A .cairn bundle (a shared workspace) opens in Cairn: its import starts, in the running
; window when there is one. The ProgID and the MIME type are app/base/file_types.py's. Only the
; ProgID and Cairn's own values are removed on uninstall: another app's claim on .cairn stays.
Root: HKA; Subkey: "Software\Classes\.cairn"; ValueType: string; ValueName: ""; ValueData: "Cairn.Bundle"; Flags: uninsdeletevalue
Root: HKA; Subkey: "Software\Classes\.cairn"; ValueType: string; ValueName: "Content Type"; ValueData: "application/x-cairn-bundle"; Flags: uninsdeletevalue
Root: HKA; Subkey: "Software\Classes\.cairn\OpenWithProgids"; ValueType: string; ValueName: "Cairn.Bundle"; ValueData: ""; Flags: uninsdeletevalue
Root: HKA; Subkey: "Software\Classes\Cairn.Bundle"; ValueType: string; ValueName: ""; ValueData: "Cairn workspace bundle"; Flags: uninsdeletekey
Root: HKA; Subkey: "Software\Classes\Cairn.Bundle\DefaultIcon"; ValueType: string; ValueName: ""; ValueData: """{app}\Cairn.exe"",0"
Root: HKA; Subkey: "Software\Classes\Cairn.Bundle\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\Cairn.exe"" open ""%1"""
; cairn:// links (app/base/cairn_link.py: cairn://open?workspace=ID, cairn://chat/ID) open in
; Cairn, in the running window when there is one; Cairn checks each link and refuses any other.
Root: HKA; Subkey: "Software\Classes\cairn"; ValueType: string; ValueName: ""; ValueData: "URL:Cairn link"; Flags: uninsdeletekey
Root: HKA; Subkey: "Software\Classes\cairn"; ValueType: string; ValueName: "URL Protocol"; ValueData: ""
Root: HKA; Subkey: "Software\Classes\cairn\DefaultIcon"; ValueType: string; ValueName: ""; ValueData: """{app}\Cairn.exe"",0"
Root: HKA; Subkey: "Software\Classes\cairn\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\Cairn.exe"" open ""%1"""

[Run]
Filename: "{app}\Cairn.exe"; Description: "{cm:LaunchProgram,Cairn}"; Flags: nowait postinstall skipifsilent

; Uninstalling removes only what this installer put in {app}. It must NOT delete the user's data
; folder, %LOCALAPPDATA%\Cairn (cairn.db with workspaces, chats and knowledge; the files\ blob
; store), nor the API key in Windows Credential Manager: user chats and knowledge must never be
; lost, and a reinstall picks them up again. So there is deliberately no [UninstallDelete] here.

[Code]
// "Add Cairn to PATH": the user's Path in a per-user install, the machine's for all users.
// Added only when absent; at uninstall, the entry naming this program folder is taken out
// (and nothing else: Path is rewritten, never deleted). Registry entries with Flags
// uninsdeletevalue would delete the whole Path value, hence code.
const
  UserEnvironment = 'Environment';
  SystemEnvironment = 'SYSTEM\CurrentControlSet\Control\Session Manager\Environment';

function EnvironmentRoot: Integer;
begin
  if IsAdminInstallMode then Result := HKEY_LOCAL_MACHINE else Result := HKEY_CURRENT_USER;
end;

function EnvironmentKey: String;
begin
  if IsAdminInstallMode then Result := SystemEnvironment else Result := UserEnvironment;
end;

function SameDir(A, B: String): Boolean;
begin
  Result := CompareText(RemoveBackslashUnlessRoot(Trim(A)), RemoveBackslashUnlessRoot(Trim(B))) = 0;
end;

// Path without any entry naming Dir; Found says whether there was one.
function PathWithout(Path, Dir: String; var Found: Boolean): String;
var
  Rest, Entry: String;
  Cut: Integer;
begin
  Result := '';
  Found := False;
  Rest := Path;
  while Rest <> '' do
  begin
    Cut := Pos(';', Rest);
    if Cut = 0 then
    begin
      Entry := Rest;
      Rest := '';
    end else begin
      Entry := Copy(Rest, 1, Cut - 1);
      Rest := Copy(Rest, Cut + 1, Length(Rest));
    end;
    if SameDir(Entry, Dir) then
      Found := True
    else if Entry <> '' then
    begin
      if Result <> '' then Result := Result + ';';
      Result := Result + Entry;
    end;
  end;
end;

procedure AddToPath(Dir: String);
var
  Path: String;
  Found: Boolean;
begin
  if not RegQueryStringValue(EnvironmentRoot, EnvironmentKey, 'Path', Path) then Path := '';
  PathWithout(Path, Dir, Found);
  if Found then Exit;
  if (Path <> '') and (Path[Length(Path)] <> ';') then Path := Path + ';';
  // REG_EXPAND_SZ, as Windows keeps Path: entries like %USERPROFILE%\bin stay unexpanded.
  if not RegWriteExpandStringValue(EnvironmentRoot, EnvironmentKey, 'Path', Path + Dir) then
    Log('Could not add ' + Dir + ' to Path');
end;

procedure RemoveFromPath(Dir: String);
var
  Path, Kept: String;
  Found: Boolean;
begin
  if not RegQueryStringValue(EnvironmentRoot, EnvironmentKey, 'Path', Path) then Exit;
  Kept := PathWithout(Path, Dir, Found);
  if Found and not RegWriteExpandStringValue(EnvironmentRoot, EnvironmentKey, 'Path', Kept) then
    Log('Could not remove ' + Dir + ' from Path');
end;

procedure CurStepChanged(CurStep: TSetupStep);
begin
  if CurStep = ssPostInstall then
  begin
    // An upgrade that unticks the task takes the entry out again.
    if WizardIsTaskSelected('addtopath') then
      AddToPath(ExpandConstant('{app}'))
    else
      RemoveFromPath(ExpandConstant('{app}'));
  end;
end;

procedure CurUninstallStepChanged(CurUninstallStep: TUninstallStep);
begin
  if CurUninstallStep = usPostUninstall then
    RemoveFromPath(ExpandConstant('{app}'));
end;
